"""Where a rehearsal pod's vLLM finds its model, and the words it ends with when there is none (split from ``launch``,
which decides the start)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from vllm_remedy import hub
from vllm_remedy.hub import bare_token, pod
from vllm_remedy.sim.vllm_pod import hf_cache, hub_cache_denied, hub_refusal, hub_retry, hub_token, unmodelled_start
from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.catalog import ModelSpec
from vllm_remedy.vllm.versions import NEWEST_RELEASE, parse_version

#: (model, revision) → the config.json a world's seed ships for its pods (``models:``), kept apart from what the Hub
#: gave: a shipped model is the world's own, a Hub answer is asked again at each start.
_shipped: dict[tuple[str, str | None], ModelSpec] = {}


def ship(model_id: str, revision: str | None, spec: ModelSpec) -> None:
    """A seed's model: its pods find this config at ``revision`` (None: at any revision) without any network."""
    _shipped[(model_id, hub.same_revision(revision))] = spec


def model_spec(model_id: str, revision: str | None, container: Mapping[str, Any] | None = None,
               server: Any | None = None) -> ModelSpec:
    """The model as vLLM would find it at this start: the catalog, a config the world ships (``models:`` in its seed),
    then the Hugging Face cache and Hub the way the tools resolve it (``hub``), with the pod's own HF_TOKEN (or its
    ``--hf-token`` where the release sends it: ``pod.sent``, read from ``server``, the start's parsed command),
    HF_ENDPOINT and HF_HUB_OFFLINE (``container``: its env as the kubelet built it); a UserError when none has it,
    ``unmodelled_start.Unmodelled`` when the config was had but the memory model cannot size it.

    Each start asks again, as vLLM's ``hf_hub_download`` does at each container start: a branch is revalidated and a
    Hub that failed the last start is asked anew, so a restart after the Hub recovers serves."""
    spec = catalog.repo_model(model_id, revision)
    if spec is not None:
        return spec
    shipped = _shipped.get((model_id, hub.same_revision(revision))) or _shipped.get((model_id, None))
    if shipped is not None:
        return shipped
    # a token file is where a mounted volume may hold one, not in an emptyDir (``hub.bare_token``)
    stored = None if container is None else bare_token.stored_in(
        container, lambda mount: mount.get(hf_cache.KIND) in hf_cache.PER_POD)
    env = pod.sent(pod.from_container(container), server, stored) if container is not None else None
    # a local path is the pod's volume, not this machine's
    unsized: unmodelled_start.Unmodelled | None = None
    try:
        spec, source = hub.resolve(model_id, revision, in_pod=True, env=env, per_start=True)
    except hub.Unresolved as err:  # a config the Hub gave that the memory model cannot size: no "no" of the Hub's
        if err.kind is not None or not str(err).startswith("cannot predict"):
            raise
        path, config = unmodelled_start.config_read(model_id, revision, hub.cache_dir())
        unsized = unmodelled_start.Unmodelled(str(err), config)
        source = f"the local Hugging Face cache ({path})" if path else "the Hub"
    # the download (or the cache's copy) comes before vLLM reads the config: its failures first
    if container is not None and (cache := hf_cache.read_only(container)) is not None:
        hf_cache.check(model_id, source, cache)  # a cache on a read-only volume takes no download (``hf_cache``)
    elif container is not None and env is not None and pod.OFFLINE in env and pod.offline(env):
        hf_cache.check_offline(model_id, source, container, pod.endpoint(env))  # its own cache only (``hf_cache``)
    elif container is not None:  # a user who may not create the cache's folders (``hub_cache_denied``)
        hub_cache_denied.check(model_id, container, pod.offline(env))
    if unsized is not None:
        raise unsized
    return spec


def no_model_error(version: str, model_id: str) -> str:
    """What vLLM raises for a model id that is neither a Hugging Face repo nor a local folder."""
    if (parse_version(version) or NEWEST_RELEASE) >= (0, 8, 0):
        return (f"ValueError: Invalid repository ID or local directory specified: '{model_id}'.\n"
                "Please verify the following requirements:\n"
                "1. Provide a valid Hugging Face repository ID.\n"
                "2. Specify a local directory that contains a recognized configuration file.\n"
                "   - For Hugging Face models: ensure the presence of a 'config.json'.\n"
                "   - For Mistral models: ensure the presence of a 'params.json'.")
    return (f"OSError: {model_id} is not a local folder and is not a valid model identifier listed on "
            "'https://huggingface.co/models'\nIf this is a private repository, make sure to pass a token having "
            "permission to this repo either by logging in with `huggingface-cli login` or by passing "
            "`token=<your_token>`")


class Refused(NamedTuple):
    """What the pod prints when its model's config could not be had, as ``launch.Refusal`` holds it: the exception,
    its own frames below ``run_server`` (empty: the config stage's), and the lines logged before it (``waits``,
    their sources in ``waits_from``); ``stage`` "config", or ``unmodelled_start.STAGE`` for a config the memory
    model cannot size (the rehearsal's own record, not vLLM's exception)."""

    error: str
    frames: tuple[tuple[str, int, str, str], ...] = ()
    waits: tuple[tuple[float, str, str], ...] = ()
    waits_from: tuple[str, ...] = ()
    stage: str = "config"


def refused(version: str, model_id: str, revision: str | None, exc: Exception,
            typed_quant: str | None = None) -> Refused:
    """:func:`refused_words`, with huggingface_hub's own frames for a bare ``--hf-token`` (``hub_token.frames``) and
    the "Error retrieving file list" lines vLLM's retried listing logs first (``hub_retry``); for a config the memory
    model cannot size, the release's refusal of it or the rehearsal's record (``unmodelled_start.ended``, with the
    pod's --quantization ``typed_quant``)."""
    v = parse_version(version) or NEWEST_RELEASE
    if isinstance(exc, unmodelled_start.Unmodelled):
        return Refused(**unmodelled_start.ended(v, model_id, exc, typed_quant))
    said = refused_words(version, model_id, revision, exc)
    if isinstance(exc, hub.Unresolved) and exc.kind == "no_token":
        return Refused(said, hub_token.frames(v))
    if isinstance(exc, hub.Unresolved) and not isinstance(exc, (hf_cache.ReadOnlyCache, hub_cache_denied.CacheDenied)):
        waits, sources = hub_retry.logs(v, exc.kind, said)
        return Refused(said, waits=waits, waits_from=sources)
    return Refused(said)


def refused_words(version: str, model_id: str, revision: str | None, exc: Exception) -> str:
    """What the pod's vLLM ends in when its model's config could not be had (``exc``, from :func:`model_spec`): the
    Hub's gated / no-such-revision / refused-token answer, or offline with nothing cached, as that release words it
    (``hub_refusal``), or huggingface_hub's refusal of a bare ``--hf-token`` (``hub_token``); anything else vLLM's
    generic refusal (:func:`no_model_error`)."""
    if isinstance(exc, hf_cache.ReadOnlyCache):
        return hf_cache.words(model_id, exc.path)
    if isinstance(exc, hub_cache_denied.CacheDenied):
        return hub_cache_denied.words(parse_version(version) or NEWEST_RELEASE, model_id, exc.path, exc.container)
    if isinstance(exc, hub.Unresolved) and exc.kind == "no_token":  # a bare --hf-token, no token (``hub_token``)
        return hub_token.MESSAGE
    if isinstance(exc, hub.Unresolved):
        said = hub_refusal.words(version, model_id, revision, exc.kind, exc.hub, exc.hub_said)
        if said is not None:
            return said
    return no_model_error(version, model_id)
