"""The Hub settings of the process that loads a model: a pod's own ``HF_TOKEN``, ``HF_ENDPOINT`` and
``HF_HUB_OFFLINE`` (or its older name ``TRANSFORMERS_OFFLINE``), where they differ from this process's environment.

vLLM downloads config.json with the token, mirror and offline switch of *its* environment, the pod's. The rehearsal
cluster knows a pod's environment exactly (the kubelet built it), so it resolves with all three. ``check`` and the
deploys read a manifest: they can tell whether the pod sets a token (an ``env`` entry, a ``secretKeyRef``) but not a
Secret's value: none (vLLM gets the Hub's 401 for a gated repository), a literal, or :data:`UNREAD` (a Secret: this
machine's token stands in for it, and what the Hub refuses to it is not what it would refuse to the pod). A mirror
the manifest states is the Hub asked, as the pod asks it (one it does not state, or this tool cannot read, leaves this
process's). A pod offline by its own switch reads its own cache and nothing else, which this machine does not share:
it dies when that cache starts empty (the container's filesystem in vLLM's image), and otherwise cannot be predicted
from here (``offline_refusal``). vLLM's own ``--hf-token`` replaces the environment's token where the release sends
it with the config reads (:func:`sent`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

#: The variables huggingface_hub reads for a download, in the order it reads them.
TOKEN, ENDPOINT, OFFLINE = "HF_TOKEN", "HF_ENDPOINT", "HF_HUB_OFFLINE"
LEGACY_TOKEN = "HUGGING_FACE_HUB_TOKEN"  # huggingface_hub still reads it when HF_TOKEN is unset
#: huggingface_hub's other name for the offline switch, read when HF_HUB_OFFLINE is unset or empty:
#: ``HF_HUB_OFFLINE = _is_true(os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE"))``
#: (constants.py, the same line in 0.20.3, 0.24.0, 1.0.0 and 2.4.0: every release's image), which vLLM and
#: transformers read for ``local_files_only``. Still common in manifests written for transformers-era images.
LEGACY_OFFLINE = "TRANSFORMERS_OFFLINE"
#: A pod's variable that is set but cannot be read here (a Secret's value): this process's value stands in for it.
UNREAD = "\0unread"

#: name -> the pod's value (None: unset in the pod, :data:`UNREAD`: set, unreadable); a name absent: this process's.
Env = Mapping[str, str | None]
_TRUE = ("1", "on", "yes", "true")


def value(env: Env | None, name: str) -> str | None:
    """``name`` as the loading process has it: the pod's where ``env`` says, else this process's."""
    if env is not None and name in env and env[name] != UNREAD:
        return env[name]
    return os.environ.get(name)


def token(env: Env | None) -> str | None:
    return value(env, TOKEN) or (None if env is not None and TOKEN in env else os.environ.get(LEGACY_TOKEN)) or None


def offline(env: Env | None = None) -> bool:
    """Whether the loading process is offline: the pod's switch where ``env`` has it (:func:`from_container` and
    :func:`from_manifest` fold :data:`LEGACY_OFFLINE` into it), else this process's, read as huggingface_hub reads
    it (HF_HUB_OFFLINE, or when that is unset or empty TRANSFORMERS_OFFLINE)."""
    return (_offline_value(env) or "").strip().lower() in _TRUE


def offline_by(env: Env | None = None) -> str:
    """The variable that makes the loading process offline (for the one line that says so)."""
    if env is not None and OFFLINE in env and env[OFFLINE] != UNREAD:
        return str(env.get(_SAID_BY) or OFFLINE)
    return OFFLINE if os.environ.get(OFFLINE) else LEGACY_OFFLINE


#: The key :func:`offline_switch` adds beside :data:`OFFLINE`: the pod's variable that set it.
_SAID_BY = "\0offline-by"


def _offline_value(env: Env | None) -> str | None:
    if env is not None and OFFLINE in env and env[OFFLINE] != UNREAD:
        return env[OFFLINE]
    return os.environ.get(OFFLINE) or os.environ.get(LEGACY_OFFLINE)


def offline_switch(values: Mapping[str, str | None]) -> dict[str, str | None]:
    """The pod's offline switch from its variables (``values``: name -> value), as huggingface_hub reads it:
    ``{HF_HUB_OFFLINE: HF_HUB_OFFLINE or TRANSFORMERS_OFFLINE}`` when the pod sets either, else nothing (this
    process's switch then stands in)."""
    if OFFLINE not in values and LEGACY_OFFLINE not in values:
        return {}
    by = OFFLINE if values.get(OFFLINE) or not values.get(LEGACY_OFFLINE) else LEGACY_OFFLINE
    return {OFFLINE: values.get(OFFLINE) or values.get(LEGACY_OFFLINE) or "", _SAID_BY: by}


def endpoint(env: Env | None = None) -> str:
    return (value(env, ENDPOINT) or "https://huggingface.co").rstrip("/")


def token_is_vllms(env: Env | None, in_pod: bool) -> bool:
    """Whether the token asked with is the one vLLM would send: this process's for a model of this machine, the pod's
    when it is known (set to a literal, or not set at all). Only then is the Hub's "gated" or "not found" (a private
    repository answers 404 to a caller without access) vLLM's own answer."""
    if not in_pod:
        return True
    return env is not None and TOKEN in env and env[TOKEN] != UNREAD


def key(env: Env | None) -> tuple[Any, ...]:
    """What of ``env`` decides a resolution's answer (the token by a short digest: it is no memo key in clear), and
    for a manifest's pod offline by its own switch, what its own cache can hold."""
    import hashlib

    secret = token(env)
    own = (env[CACHE], env.get(UNSEEN)) if env is not None and CACHE in env else ()
    own += (env[OPAQUE],) if env is not None and OPAQUE in env else ()
    return endpoint(env), offline(env), hashlib.sha256(secret.encode()).hexdigest()[:16] if secret else None, *own


def from_container(container: Mapping[str, Any]) -> dict[str, str | None]:
    """A rehearsal pod's: its ``env`` entries are the kubelet's literal values. The token is the pod's alone (unset:
    none); the mirror and the offline switch are the pod's when it sets them, else this process's, which stands for
    the Hub the rehearsal cluster's pods reach."""
    values = {str(e.get("name")): e.get("value") for e in container.get("env") or []
              if isinstance(e, Mapping) and isinstance(e.get("value"), str)}
    out: dict[str, str | None] = {TOKEN: values.get(TOKEN) or values.get(LEGACY_TOKEN) or None}
    if ENDPOINT in values:
        out[ENDPOINT] = values[ENDPOINT]
    return {**out, **offline_switch(values)}


#: Keys :func:`from_manifest` adds for a pod offline by its own switch: its Hugging Face cache's path, and why this
#: machine cannot tell what that cache holds (None: it starts empty: ``hub.pod_cache.unseen``).
CACHE, UNSEEN = "\0cache", "\0unseen"


def from_manifest(container: Mapping[str, Any], maps: Mapping[str, Mapping[str, str]] | None = None
                  ) -> dict[str, str | None]:
    """A manifest's pod, for ``check``, ``plan -f``, drift and the deploys: its token (see the module), the
    HF_ENDPOINT it states (the Hub it asks; one this tool cannot read leaves this process's), and its offline switch
    (HF_HUB_OFFLINE or TRANSFORMERS_OFFLINE), with what its own cache can hold (:data:`CACHE`, :data:`UNSEEN`)."""
    from vllm_remedy.hub import pod_cache

    out: dict[str, str | None] = {TOKEN: _manifest_token(container, maps)}
    endpoint = _manifest_value(container, ENDPOINT, maps)
    if endpoint is not None:
        out[ENDPOINT] = endpoint
    out.update(offline_switch({name: got for name in (OFFLINE, LEGACY_OFFLINE)
                               if (got := _manifest_value(container, name, maps)) is not None}))
    if OFFLINE in out and offline(out):
        out[CACHE], out[UNSEEN] = pod_cache.unseen(container)
    elif (why := _unreadable_switch(container, maps, offline_known=OFFLINE in out)) is not None:
        out[OPAQUE] = why
    return out


#: The key :func:`from_manifest` adds when the pod sets its mirror or offline switch from a source this tool cannot
#: read (a ConfigMap not among the manifests or not in the cluster, a Secret, a field): why, one phrase.
OPAQUE = "\0opaque"


def _unreadable_switch(container: Mapping[str, Any], maps: Mapping[str, Mapping[str, str]] | None,
                       offline_known: bool) -> str | None:
    """Why the Hub the pod asks, or whether it asks one at all, cannot be read here: HF_ENDPOINT, or the offline
    switch (HF_HUB_OFFLINE, or TRANSFORMERS_OFFLINE when HF_HUB_OFFLINE is not known to be set), from a source this
    tool does not see. This process's value never stands in for the pod's there: a mirror that holds the model, or an
    offline switch with no cache, is exactly what a ConfigMap shared by a cluster's Deployments carries."""
    from vllm_remedy.errors import UserError
    from vllm_remedy.vllm import pod_env

    names = (ENDPOINT,) if offline_known else (ENDPOINT, OFFLINE, LEGACY_OFFLINE)
    for name in names:
        try:
            got = pod_env.read(container, name, maps)
        except UserError:
            return None  # Kubernetes refuses the env: said elsewhere (pod_env.invalid)
        if got.unknown is not None:
            return f"the pod's {got.unknown}"
    return None


def opaque(env: Env | None) -> str | None:
    """Why a manifest's pod's Hub or offline switch cannot be read (:data:`OPAQUE`), None when it can."""
    return env.get(OPAQUE) if env is not None else None


def _manifest_token(container: Mapping[str, Any], maps: Mapping[str, Mapping[str, str]] | None) -> str | None:
    from vllm_remedy.errors import UserError
    from vllm_remedy.vllm import pod_env

    for name in (TOKEN, LEGACY_TOKEN):
        try:
            got = pod_env.read(container, name, maps)
        except UserError:
            return UNREAD
        if got.unknown is not None:
            return UNREAD
        if got.value:
            return got.value
    return None


def _manifest_value(container: Mapping[str, Any], name: str, maps: Mapping[str, Mapping[str, str]] | None
                    ) -> str | None:
    """``name`` as the pod has it; None when unset or not readable here (this process's then stands in)."""
    from vllm_remedy.errors import UserError
    from vllm_remedy.vllm import pod_env

    try:
        got = pod_env.read(container, name, maps)
    except UserError:
        return None
    return got.value if got.unknown is None else None


def offline_refusal(repo_id: str, at: str, env: Env) -> tuple[str, bool]:
    """(the line for a manifest's pod offline by its own switch, whether vLLM certainly dies on it): its config.json
    can come only from its own cache, which starts empty (certain) or which this machine cannot see."""
    by, path, why = offline_by(env), env.get(CACHE), env.get(UNSEEN)
    if why is None:
        return (f"model {repo_id}{at}: {by} is set in the pod and its Hugging Face cache ({path}) is the container's "
                "own, empty at start in vLLM's image: vLLM finds no config.json offline"), True
    return (f"model {repo_id}{at}: {by} is set in the pod, so vLLM reads config.json only from the pod's own Hugging "
            f"Face cache ({path}, {why}); name its config in the policy (model_config)"), False


#: vLLM's own ``--hf-token`` (from 0.8.5; ``nargs="?"``, ``const=True``, engine/arg_utils.py@0.8.5 l.624, @0.19.0
#: l.746, @0.34.0 through ``get_kwargs`` l.378-382) reaches the config.json reads from 0.19.0: ``get_config(...,
#: token=self.hf_token)`` (config/model.py@0.19.0 l.499, @0.34.0 l.705) and ``maybe_override_with_speculators(
#: hf_token=self.hf_token)`` (engine/arg_utils.py@0.19.0 l.1545, @0.34.0 l.2309). Before, both read with the
#: environment's token whatever the flag says (``_get_hf_token()`` in transformers_utils/config.py@0.12.0 l.481,
#: ``get_config`` given no token in config/model.py@0.18.0 l.476).
FLAG_SINCE: tuple[int, int, int] = (0, 19, 0)


def flag_token(server: Any) -> str | bool | None:
    """``--hf-token`` as the pod's argparse types it (the last occurrence): None when absent, True when bare (then
    huggingface_hub's ``get_token()``: the environment's token, else the stored one), else its value, or
    :data:`UNREAD` when that names a variable this tool cannot read (``$(HF_TOKEN)`` from a Secret)."""
    options = [o for o in getattr(server, "options", None) or [] if o.name == "hf-token"]
    if not options:
        value = (getattr(server, "flags", None) or {}).get("hf-token")  # a --config file's key
        return None if value is None else UNREAD if "$" in value or "{{" in value else value
    last = options[-1]
    if not last.values:
        return True
    return UNREAD if server.placeholder(last.tokens) else last.values[-1]


def sent(env: dict[str, str | None], server: Any | None, stored: bool | None = None) -> dict[str, str | None]:
    """``env`` with the token the pod's vLLM sends for config.json: ``--hf-token``'s value where the release
    passes it there (:data:`FLAG_SINCE`), else the environment's (a bare flag: the environment's as well). A bare flag
    with no token to be found in the pod (``bare_token``: no HF_TOKEN, and ``stored`` false, by default
    ``bare_token.stored`` of the server's container) is marked :data:`bare_token.BARE`: huggingface_hub refuses it."""
    from vllm_remedy.hub import bare_token
    from vllm_remedy.vllm.versions import NEWEST_RELEASE, parse_version, version_from_image

    if server is None:
        return env
    v = parse_version(version_from_image(str(getattr(server, "image", "") or ""))) or NEWEST_RELEASE
    flag = flag_token(server) if v >= bare_token.SINCE else None
    if flag is True:
        if env.get(TOKEN, UNREAD) is not None:  # a token set (a literal, a Secret) or not known to be unset
            return env
        return bare_token.marked(env, v, getattr(server, "container", None), stored)
    return env if v < FLAG_SINCE or flag is None else {**env, TOKEN: flag}


def says_token(env: Env | None) -> bool:
    """Whether the pod sets a token (a literal or a Secret's)."""
    return env is not None and env.get(TOKEN) is not None
