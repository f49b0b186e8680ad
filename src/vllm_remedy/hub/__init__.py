"""Where a model's config.json comes from: the catalog, the local Hugging Face cache, the Hub, a policy's copy.

The order is the issue's and vLLM's own: the packaged catalog (reviewed numbers, no I/O) for exactly the repository
ids it holds at main or a commit it lists — never a name's look-alike, since vLLM serves whatever config.json that
repository has at that revision (``catalog.repo_model``); a local path is not a repository id; then the local Hugging
Face cache (``HF_HOME`` / ``HF_HUB_CACHE``, what vLLM itself downloaded or a previous run fetched) and the Hub
through ``huggingface_hub`` (which of the two answers first: below), so ``HF_ENDPOINT`` (a mirror), ``HF_TOKEN``
(gated repositories) and ``HF_HUB_OFFLINE`` mean what they mean to vLLM; and last a config the policy names (a
file, or a ConfigMap the caller reads), for clusters that reach no Hub.
A Deployment's ``--revision`` pins the config's revision.

A file fetched once lands in the Hugging Face cache. As in vLLM, a branch or tag (``main``) is revalidated with one
HEAD per resolution — after the repository's ``main`` moves the new config is read — and the cached copy serves,
with a warning, only when the Hub errs or does not answer; a commit's snapshot is read without a request. A process
resolves each (model, revision) once (no ``--revision`` and ``main`` are one), failures included, so a fleet run asks
the Hub once per model; one resolution online lasts at most ``VLLM_REMEDY_HUB_TIMEOUT`` seconds (``hub.ask``), and a
Hub that let it run out is not waited for again in that run. A rehearsal pod's start is the exception: vLLM asks at
each container start, so the cluster resolves afresh each time (``per_start``). A read-only cache here changes no
answer: what the Hub sent serves from memory (``hub.ask``); a rehearsal pod's own cache is its container's, which
vLLM writes into, so it starts as well, unless the pod mounts its cache read-only (``sim.vllm_pod.hf_cache``). That
cache is the pod's alone: a copy another pod's download put in this machine's cache neither overrules the Hub's "no"
to the pod nor stands in for the pod's own request (``hub.given``). A manifest's pod (``check``, ``plan -f``, drift,
the deploys) shares no cache with this machine at all, so there the Hub's "no" is the answer whatever this machine
holds, and a CI runner's verdict does not hang on its ~/.cache; only a Hub that errs or does not answer lets this
machine's copy serve, with a warning. ``estimate --model`` sizes a start on this machine, whose vLLM would read this
cache (huggingface_hub falls back to it on an HTTP error, a gated repository's 401 included): there the cached copy
serves, with a warning naming the refusal.

The Hub's own "no" — no such repository or revision, a gated repository refused to the token vLLM sends — is
:class:`Unavailable`: vLLM dies on it (``model_unavailable``), so the policy's copy does not stand in for it; that copy
is for a Hub that cannot be asked. The token is the loading process's: a pod's own (``hub.pod``), not this machine's;
a bare ``--hf-token`` in a pod that has none is huggingface_hub's refusal, Unavailable too (``hub.bare_token``).
Environment variables are read at each resolution, not at import, because the rehearsal cluster runs
in-process beside tests that point ``HF_ENDPOINT`` at their own server.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from vllm_remedy.errors import UserError
from vllm_remedy.hub import ask as hub_ask
from vllm_remedy.hub import bare_token, given, names, pod, policy_copy, quant_file, words
from vllm_remedy.hub.config_text import config_from_json as config_from_json
from vllm_remedy.hub.config_text import read_file as read_file
from vllm_remedy.hub.config_text import spec_from_config as spec_from_config
from vllm_remedy.hub.config_text import spec_from_json as spec_from_json
from vllm_remedy.hub.unresolved import Reason as Reason
from vllm_remedy.hub.unresolved import Unavailable as Unavailable
from vllm_remedy.hub.unresolved import Unresolved as Unresolved
from vllm_remedy.vllm import catalog, hf_overrides, resolved
from vllm_remedy.vllm.catalog import ModelSpec

CONFIG = hub_ask.CONFIG
MAX_CONFIG_BYTES = hub_ask.MAX_CONFIG_BYTES

#: A caller's fallback: (where it is, a function returning the config.json mapping), e.g. the policy's file.
Fallback = tuple[str, Callable[[], Mapping[str, Any]]]


def offline(env: pod.Env | None = None) -> bool:
    return pod.offline(env)


def cache_dir() -> str | None:
    """The Hugging Face hub cache as huggingface_hub would pick it, read now (None: the library's default)."""
    if os.environ.get("HF_HUB_CACHE"):
        return os.environ["HF_HUB_CACHE"]
    if os.environ.get("HF_HOME"):
        return os.path.join(os.environ["HF_HOME"], "hub")
    return None


def endpoint(env: pod.Env | None = None) -> str:
    return pod.endpoint(env)


def fetch_config(repo_id: str, revision: str | None = None, env: pod.Env | None = None, in_pod: bool = False,
                 per_start: bool = False) -> tuple[str, str, str]:
    """(the config.json text, where it came from, its path in the cache) as vLLM would get it; :class:`Unresolved`
    (one line) else, and :class:`Unavailable` for the Hub's own "no" to the token vLLM sends (``env``: the pod's,
    :mod:`hub.pod`).

    A commit's snapshot in the local cache is read without a request (a commit never changes; for a manifest's pod
    one HEAD asks whether the Hub still gives it to the pod); a branch or tag is
    revalidated against the Hub (``hub.ask``), and its cached copy is read, with a warning, only when the Hub does not
    answer (or, for this machine's own model, refuses: see the module); ``HF_HUB_OFFLINE`` reads the cache alone.
    ``per_start``: a rehearsal pod's start, which asks the Hub again whatever an earlier start found (a Hub silent
    then is asked again).

    A ``revision`` that is no git ref name is refused before anything is asked or read (``hub.names``). A cache that
    cannot be written (read-only) does not discard the Hub's answer: the file just fetched serves from memory, with
    one warning per cache, and a cached commit the Hub has just superseded is never read in its stead."""
    # Imported here: huggingface_hub pulls in an HTTP stack that catalog models and `--help` never need.
    import huggingface_hub as hf
    from huggingface_hub import errors
    from huggingface_hub.utils import logging as hf_logging

    at = f" at revision {revision}" if revision else ""
    bad = revision and not hub_ask.COMMIT.fullmatch(revision) and names.revision_problem(revision)
    if bad:  # before any request or cache read: it would be joined onto the cache's refs/ as a path
        raise Unavailable(f"model {repo_id}: --revision {revision!r} is no branch, tag or commit name ({bad}); the "
                          "Hub has no such revision and vLLM's download of it fails").said("revision", endpoint(env))
    try:
        cached = hf.try_to_load_from_cache(repo_id, CONFIG, cache_dir=cache_dir(), revision=revision)
    except (ValueError, errors.HFValidationError):
        raise Unresolved(words.not_an_id(repo_id)) from None
    cached = cached if isinstance(cached, str) else None
    if in_pod and not per_start and (why := pod.opaque(env)) is not None:  # its Hub or offline switch: not this one's
        raise Unresolved(f"model {repo_id}{at}: which Hub the pod's vLLM asks for {CONFIG}, if any, is not known: "
                         f"{why}, and this machine's value does not stand in for the pod's; check it with the "
                         "ConfigMap it comes from, or name the model's config in the policy (model_config)")
    if in_pod and not per_start and env is not None and pod.CACHE in env:  # a manifest's pod, offline by its own switch
        line, certain = pod.offline_refusal(repo_id, at, env)  # its own cache only, never this machine's nor the Hub
        raise (Unavailable if certain else Unresolved)(line).said("offline", endpoint(env))
    if cached is not None and in_pod and not offline(env) and given.others(cached, pod.key(env)):
        cached = None  # another pod's download, not in this pod's cache: its vLLM asks the Hub for the commit
    # a commit never changes, so its cached snapshot is read without a request, except for a manifest's pod: that
    # cache is not the pod's, whose vLLM asks the Hub, which may no longer give the commit to it (gated, deleted)
    manifest = in_pod and not per_start
    if cached is not None and (offline(env) or (hub_ask.COMMIT.fullmatch(revision or "") and not manifest)):
        return _read(cached), f"the local Hugging Face cache ({cached})", cached
    if offline(env):
        raise Unresolved(f"model {repo_id}{at}: not in the catalog nor the local Hugging Face cache, and "
                         f"{pod.offline_by(env)} is set").said("offline" if env and pod.OFFLINE in env else None,
                                                       endpoint(env))
    hub = endpoint(env)
    hf_logging.set_verbosity_error()  # its retry warnings are not ours to print: the one line below is
    # huggingface_hub reads HF_HUB_OFFLINE once, at import; we read it at each call (the rehearsal cluster resolves
    # in the same process as the deploy it serves, and the environment may have changed since). Offline was ruled
    # out above, so the library must not refuse on a reading taken before.
    hf.constants.HF_HUB_OFFLINE = False
    seconds = hub_ask.limit()
    token = _token(env)
    try:
        silent = None if per_start else _memo.get(_silent(hub))
        if isinstance(silent, str):  # it did not answer earlier in this run: a fleet does not wait on it once per model
            raise hub_ask.Failed(f"{silent} (earlier in this run)")
        deadline = time.monotonic() + seconds
        got = hub_ask.within(seconds, lambda: hub_ask.ask(repo_id, revision or "main", hub, cache_dir(), token,
                                                          deadline))
    except hub_ask.Failed as exc:
        if exc.why.startswith("did not answer within") and not per_start:
            _memo.setdefault(_silent(hub), exc.why)
        # a pod's cache is its own: a copy the Hub gave to another environment does not overrule its "no" to this one,
        # and a manifest's pod (check, drift, the deploys: not ``per_start``) has none of this machine's copies at all
        if cached is not None and in_pod and _definitive(exc, env, in_pod) and (
                not per_start or given.others(cached, pod.key(env))):
            cached = None
        reason = words.unresolved(repo_id, revision, hub, exc, cached is not None, env, in_pod)
        if cached is None or exc.final:
            kind, hub_said = ((exc.kind, exc.said) if isinstance(exc, hub_ask.NotFound) else
                              ("unreachable", exc.why) if hub_ask.no_hub(exc) else (None, None))
            raise (Unavailable if _definitive(exc, env, in_pod) else Unresolved)(reason).said(kind, hub,
                                                                                             hub_said) from None
        note = f"not revalidated: {reason.removeprefix(f'model {repo_id}: ')}"
        print(f"vllm-remedy: warning: model {repo_id}{at}: {CONFIG} from the local Hugging Face cache ({cached}), "
              f"{note}", file=sys.stderr)
        return _read(cached), f"the local Hugging Face cache ({cached}), {note}", cached
    given.record(got.path, pod.key(env), got.downloaded)
    if got.unkept is not None:  # the cache refused the download: the Hub's answer, held in memory, serves
        hub_ask.warn_unkept(got, cache_dir())
        return got.read().decode("utf-8", errors="replace"), f"the Hub ({hub})", got.path
    if got.downloaded:
        return _read(got.path), f"the Hub ({hub})", got.path
    return _read(got.path), f"the local Hugging Face cache ({got.path}), revalidated with the Hub ({hub})", got.path


def _token(env: pod.Env | None) -> str | bool | None:
    """The token to send: a pod's own or none (False: huggingface_hub must not fall back to this machine's HF_TOKEN
    or token file in its stead)."""
    unset = env is not None and pod.TOKEN in env and env[pod.TOKEN] is None
    return pod.token(env) or (False if unset else None)


def _definitive(exc: hub_ask.Failed, env: pod.Env | None, in_pod: bool) -> bool:
    """Whether the Hub's answer is vLLM's own: a revision it does not have, or a repository it does not show (or
    gates) to the token vLLM sends — a private repository is "not found" to a caller without access."""
    if not isinstance(exc, hub_ask.NotFound):
        return False
    return exc.kind == "revision" or (exc.kind in ("repository", "gated", "unauthorized")
                                      and pod.token_is_vllms(env, in_pod))


def _read(path: str) -> str:
    return read_file(path, path).decode("utf-8", errors="replace")


def config_beside(config: Any, directory: Path) -> Any:
    """``directory``'s config.json as vLLM reads that directory (``quant_file.beside``), for both ways in to it."""
    return quant_file.beside(config, directory, config_from_json, _read)


def _silent(hub: str) -> tuple[str, None, tuple[str]]:
    """The memo's key for "the Hub at ``hub`` did not answer within the limit" this run (later models are not
    waited on); kept beside the models' answers so that whatever ends a run's memo ends it too."""
    return hub, None, ("did not answer",)


#: (model, revision, the environment that decides the answer) → what resolving it gave (spec, source, the config,
#: why the policy's copy stood in or None), failures included.
_memo: dict[tuple[str, str | None, tuple[Any, ...]], tuple[ModelSpec, str, Any, str | None] | Unresolved | str] = {}
#: (model, revision, :func:`answer_key`) → the finding's note when that resolution was the policy's model_config (the
#: Hub could not be asked), so a prediction sized from it says so.
_fell_back: dict[tuple[str, str | None, tuple[Any, ...]], str] = {}
#: (model, revision) → the :func:`answer_key` of its latest resolution, what a note outside any workload's scope reads.
_latest_key: dict[tuple[str, str | None], tuple[Any, ...]] = {}
#: One resolution at a time: the rehearsal cluster starts pods on several threads, and each model is asked once.
_lock = threading.Lock()


def same_revision(revision: str | None) -> str | None:
    """The memo's spelling of a revision: no ``--revision`` is ``main`` (vLLM's default), one resolution for both."""
    return None if revision in (None, "", "main") else revision


def fallback_note(model_id: str, revision: str | None = None) -> str | None:
    """How the model was sized, for the workload predicted now (``resolved.current``), when the policy's model_config
    stood in for the Hub (None: it did not)."""
    key = resolved.current()
    if key is None:
        key = _latest_key.get((model_id, same_revision(revision)), ())
    return _fell_back.get((model_id, same_revision(revision), key))


def answer_key(env: pod.Env | None = None, fallback: Fallback | None = None, in_pod: bool = True
               ) -> tuple[Any, ...]:
    """What decides a resolution's answer besides the model and revision: the pod's Hub settings (``pod.key``), this
    process's cache, the policy copy that may stand in, and whether a local path is the pod's. A prediction looks its
    model up under its workload's key (``resolved.scope``), so each workload gets its own environment's answer."""
    return (*pod.key(env), cache_dir(), fallback and fallback[0], in_pod, bare_token.when(env))


def resolve(model_id: str, revision: str | None = None, fallback: Fallback | None = None, *,
            in_pod: bool = False, env: pod.Env | None = None, per_start: bool = False) -> tuple[ModelSpec, str]:
    """(spec, source) for a server's ``--model`` and ``--revision``; :class:`Unresolved` (one line) when nothing
    has its config, :class:`Unavailable` when the Hub said no to what vLLM would ask. The result — or the failure —
    is remembered for this process and told to :mod:`vllm_remedy.vllm.resolved`, where every prediction looks models
    up. ``in_pod``: the model is a pod's (a manifest's, a Deployment's), so a local path names the pod's volume, which
    this machine's same path is not; ``env``: that pod's Hub settings (:mod:`hub.pod`). ``per_start``: a rehearsal
    pod's start, resolved afresh as vLLM resolves at each start (a branch revalidated, a failure not kept)."""
    spec = catalog.repo_model(model_id, revision)
    if spec is not None:  # exactly a repository the catalog holds, at a revision it describes
        return spec, "catalog"
    answer = answer_key(env, fallback, in_pod)
    fresh = True
    if per_start:
        found = _resolve(model_id, revision, fallback, in_pod, env, per_start=True)
        resolved.learn(model_id, revision, found[0] if isinstance(found, tuple) else Reason.of(found), answer)
    else:
        key = (model_id, same_revision(revision), answer)
        with _lock:
            fresh = key not in _memo
            if fresh:
                _memo[key] = _resolve(model_id, revision, fallback, in_pod, env)
            found = _memo[key]
            # Told on every call: the latest answer is what a lookup outside any workload's scope reads.
            resolved.learn(model_id, revision, found[0] if isinstance(found, tuple) else Reason.of(_error(found)),
                           answer)
            _latest_key[(model_id, same_revision(revision))] = answer
            if isinstance(found, tuple) and found[3]:
                _fell_back[key] = found[3]
            else:
                _fell_back.pop(key, None)
    if not isinstance(found, tuple):
        raise _error(found)
    if fresh:
        _warm(found[0])
    hf_overrides.remember(model_id, revision, found[2], pod.key(env))  # the base a pod's --hf-overrides applies to
    return found[0], found[1]


def _warm(spec: ModelSpec) -> None:
    """An AWQ checkpoint's Marlin load replayed (or read from the disk memo) at resolution, not in an estimate."""
    from vllm_remedy.vllm.memory import awq_marlin_load  # only a resolved model needs it

    awq_marlin_load.warm(spec)


def _error(found: Unresolved | str) -> Unresolved:
    return found if isinstance(found, Unresolved) else Unresolved(found)


def _resolve(model_id: str, revision: str | None, fallback: Fallback | None, in_pod: bool,
             env: pod.Env | None = None, per_start: bool = False
             ) -> tuple[ModelSpec, str, Any, str | None] | Unresolved:
    local = Path(model_id)
    # vLLM looks for a local path first (``Path(model).exists()`` in ``file_or_path_exists``,
    # transformers_utils/config.py@0.8.5, @0.11.0; repo_utils.py@0.19.0, @0.34.0), so a bare relative directory
    # typed here (``cfg``, ``configs/llama``) is one when it exists; a pod's is not this machine's.
    is_path = local.is_absolute() or model_id.startswith(".") or (not in_pod and local.exists())
    try:
        if is_path:
            if in_pod:
                raise Unresolved(f"model {model_id}: a local path in the pod (its volume), not a repository id, which "
                                 "this tool cannot read; name its config in the policy (model_config)")
            if not (local / CONFIG).is_file():
                raise Unresolved(f"model {model_id}: a local path, not a repository id (and no {local / CONFIG} "
                                 "here); name its config in the policy (model_config)")
            text, source = _read(str(local / CONFIG)), str(local / CONFIG)
            config = config_from_json(text, f"{model_id}: {CONFIG} from {source}")
            config = config_beside(config, local)  # ModelOpt <= 0.29 exports: the scheme in a file beside it
        else:
            bare = bare_token.when(env)  # a bare --hf-token with no token: vLLM dies on it, first or after config.json
            if bare == bare_token.FIRST:
                raise Unavailable(bare_token.line(model_id, bare)).said("no_token", endpoint(env))
            text, source, path = fetch_config(model_id, revision, env, in_pod, per_start)
            if bare is not None:
                raise Unavailable(bare_token.line(model_id, bare)).said("no_token", endpoint(env))
            config = config_from_json(text, f"{model_id}: {CONFIG} from {source}")
            if quant_file.wanted(config):
                got = quant_file.fetch(model_id, revision, path, pod.endpoint(env), cache_dir(), _token(env),
                                       offline(env))
                config = quant_file.merged(config, got and config_from_json(got, f"{model_id}: {quant_file.NAME}"))
        spec = spec_from_config(config, model_id, f"{model_id}: {CONFIG} from {source}")
    except Unavailable as refused:  # the Hub's own "no": vLLM dies on it too, whatever the policy holds
        return refused
    except UserError as first:
        if fallback is None:
            return first if isinstance(first, Unresolved) else Unresolved(str(first))
        where, read = fallback
        try:
            config = read()
            # a policy's copy stands in only for the model it is of (``hub.policy_copy``); a path is the policy's
            if isinstance(read, policy_copy.PolicyCopy) and not is_path and (
                    why := read.not_for(model_id, config, in_pod)) is not None:
                return Unresolved(f"{first}; {why}")
            spec = spec_from_config(config, model_id, where)
        except UserError as exc:
            return Unresolved(f"{first}; {exc}")
        return spec, where, config, f"{where}, because {first}"
    return spec, source, config, None


def learn(model_id: str, revision: str | None = None, fallback: Fallback | None = None,
          env: pod.Env | None = None) -> str | None:
    """Resolve a pod's model (a Deployment's, a manifest's) for the predictions to come; None when the model is known,
    else why not (one line). ``env``: the pod's Hub settings as the manifest says them (``pod.from_manifest``)."""
    try:
        resolve(model_id, revision, fallback, in_pod=True, env=env)
    except UserError as exc:
        return str(exc)
    return None
