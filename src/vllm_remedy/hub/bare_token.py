"""vLLM's ``--hf-token`` given without a value in a pod that has no token: huggingface_hub's LocalTokenNotFoundError.

``--hf-token`` is ``nargs="?"``, ``const=True`` (engine/arg_utils.py@0.8.5 l.624, @0.19.0 l.746-752): bare, vLLM
passes ``token=True`` on, which asks huggingface_hub for the token it would find by itself (``get_token()``:
HF_TOKEN, else HUGGING_FACE_HUB_TOKEN, else the token file ``hf auth login`` writes at HF_TOKEN_PATH, by default
``$HF_HOME/token``) and raises ``LocalTokenNotFoundError`` when there is none ("Token is required (`token=True`),
but no token found", utils/_headers.py ``get_token_to_send``, huggingface_hub 0.35.3 l.157-164, 1.33.0 l.137-144).
``hf_hub_download`` builds its headers before anything else, offline or cached alike, and transformers' ``cached_files``
re-raises that error as it is (``raise e``: utils/hub.py@4.57.1 l.567, @5.0.0 l.507; measured with transformers
4.57.1 / huggingface_hub 0.35.3 and 5.0.0 / 1.33.0, HF_HUB_OFFLINE=0 and 1, an empty cache). Where vLLM sends it:

- 0.8.5 to 0.18.0: ModelConfig reads the image processor config with it (``get_hf_image_processor_config(...,
  hf_token=...)``, config.py@0.8.5 l.468, config/model.py@0.18.0 l.498), after config.json was read with the
  environment's token: the Hub's own "no" to that read comes first (:data:`AFTER`);
- from 0.19.0 transformers' first read of config.json takes it (``maybe_override_with_speculators(hf_token=...)``,
  arg_utils.py@0.19.0 l.1545), before any request (:data:`FIRST`).

A model that is a local directory is read without huggingface_hub, so without the token. A token file in the pod is
a mount covering its path (a Secret, a volume ``hf auth login`` wrote into): its content is not read here, so such a
pod is taken to have one (no prediction of this failure); an emptyDir starts empty.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Mapping
from typing import Any

#: the flag exists (engine/arg_utils.py@0.8.5 l.624; 0.8.3 has none: argparse refuses it)
SINCE: tuple[int, int, int] = (0, 8, 5)
#: from 0.19.0 the bare flag reaches transformers' first config.json read (``pod.FLAG_SINCE``)
FIRST_SINCE: tuple[int, int, int] = (0, 19, 0)
#: the marker ``pod.sent`` puts in a pod's env (not a variable: no name has a NUL), valued :data:`FIRST` or
#: :data:`AFTER`
BARE = "\0bare --hf-token"
FIRST, AFTER = "first", "after"
#: where huggingface_hub's home lies in a vLLM image (root's), as ``sim.vllm_pod.hf_cache.DEFAULT_HOME``
ROOT_HOME = "/root"


def marked(env: dict[str, str | None], v: tuple[int, ...], container: Mapping[str, Any] | None,
           stored: bool | None) -> dict[str, str | None]:
    """``env`` marked :data:`BARE` when the pod has no token for a bare ``--hf-token`` at release ``v``: its env sets
    none (the caller, ``pod.sent``, has seen its token known unset) and no token file can be there (``stored``, else
    :func:`stored_in` of ``container``)."""
    if stored if stored is not None else container is None or stored_in(container):
        return env
    return {**env, BARE: FIRST if tuple(v) >= FIRST_SINCE else AFTER}


def when(env: Mapping[str, str | None] | None) -> str | None:
    """:data:`FIRST`, :data:`AFTER`, or None when the pod's vLLM does not die on a bare ``--hf-token``."""
    return None if env is None else env.get(BARE)


def token_path(container: Mapping[str, Any]) -> str | None:
    """Where huggingface_hub looks for a stored token in the pod (constants.py: HF_TOKEN_PATH, else HF_HOME/token,
    HF_HOME defaulting to XDG_CACHE_HOME/huggingface, that to ~/.cache); None when HF_TOKEN_PATH is set from
    something this tool does not read."""
    values: dict[str, str | None] = {}
    for e in container.get("env") or []:
        if isinstance(e, Mapping) and e.get("name"):
            values[str(e["name"])] = e["value"] if isinstance(e.get("value"), str) else None
    if "HF_TOKEN_PATH" in values:
        return values["HF_TOKEN_PATH"] or None
    home = values.get("HF_HOME") or posixpath.join(
        values.get("XDG_CACHE_HOME") or posixpath.join(values.get("HOME") or ROOT_HOME, ".cache"), "huggingface")
    return posixpath.join(posixpath.normpath(home), "token")


def stored_in(container: Mapping[str, Any], empty: Callable[[Mapping[str, Any]], bool] = lambda mount: False
              ) -> bool:
    """Whether a token file may be in the pod: HF_TOKEN_PATH set from a Secret or a ConfigMap, or a volume mounted over
    the token's path (or a folder holding it) that is not ``empty`` (an emptyDir: nothing is in it at the start)."""
    path = token_path(container)
    if path is None:
        return True
    for mount in container.get("volumeMounts") or []:
        if not isinstance(mount, Mapping) or not isinstance(mount.get("mountPath"), str):
            continue
        root = posixpath.normpath(mount["mountPath"])
        if (path == root or path.startswith(root.rstrip("/") + "/")) and not empty(mount):
            return True
    return False


def line(repo_id: str, at: str) -> str:
    """The one line ``check``, ``plan`` and the deploys say (``at``: :data:`FIRST` or :data:`AFTER`)."""
    read = ("its first read of config.json" if at == FIRST else
            "its read of the model's image processor config, after config.json")
    return (f"model {repo_id}: vLLM's --hf-token without a value asks huggingface_hub for a stored token "
            f"(token=True) at {read}, and the pod has none (no HF_TOKEN, no token file): huggingface_hub raises "
            "LocalTokenNotFoundError; set HF_TOKEN in the pod's env (from a Secret), mount a token file at "
            "$HF_HOME/token (what `hf auth login` writes), or pass the token's value to --hf-token")
