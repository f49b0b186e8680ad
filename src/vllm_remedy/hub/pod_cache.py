"""Where a pod's vLLM keeps its Hugging Face cache, from the container's spec alone: the path its release's
transformers and huggingface_hub pick, and the mount it lies on (None: the container's own filesystem).

Read by the rehearsal (``sim.vllm_pod.hf_cache``, which judges the pod's volumes) and by ``hub.pod`` for a
manifest's pod that is offline by its own switch: its config.json can only come from that cache, which this machine
cannot see unless the cache starts empty (the container's own filesystem in vLLM's image).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from typing import Any

from vllm_remedy.vllm.versions import NEWEST_RELEASE, parse_version, version_from_image

#: Where huggingface_hub puts its cache in a vLLM image (root's home) when no variable says otherwise.
DEFAULT_HOME = "/root/.cache/huggingface"
ROOT_HOME = "/root"
#: transformers 4's own cache variables, read before huggingface_hub's (utils/hub.py@4.57.1 l.99-101:
#: TRANSFORMERS_CACHE, else PYTORCH_TRANSFORMERS_CACHE, else PYTORCH_PRETRAINED_BERT_CACHE, else HF_HUB_CACHE;
#: ``cached_files`` l.448-449 downloads config.json there when no cache_dir is passed, as vLLM passes none);
#: transformers 5 reads HF_HUB_CACHE only (utils/hub.py@5.0.0 l.389).
TRANSFORMERS4_CACHES = ("TRANSFORMERS_CACHE", "PYTORCH_TRANSFORMERS_CACHE", "PYTORCH_PRETRAINED_BERT_CACHE")
#: The first release whose image runs transformers 5 (with huggingface_hub 1.x, which transformers 4.57 refuses:
#: huggingface-hub<1.0): ``sim.vllm_pod.hub_refusal.HTTPX_SINCE``, the release its words change at.
TRANSFORMERS5_SINCE = (0, 23, 0)
#: huggingface_hub's cache variables, first set wins: HF_HUB_CACHE, then its older name HUGGINGFACE_HUB_CACHE
#: (huggingface_hub constants.py: ``HF_HUB_CACHE = getenv("HF_HUB_CACHE", getenv("HUGGINGFACE_HUB_CACHE", ...))``).
HUB_CACHES = ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE")


def cache_of(container: Mapping[str, Any]) -> str:
    """The pod's Hugging Face hub cache as its release's transformers and huggingface_hub pick it for config.json:
    transformers 4's own variables (:data:`TRANSFORMERS4_CACHES`, releases before :data:`TRANSFORMERS5_SINCE`), then
    HF_HUB_CACHE or HUGGINGFACE_HUB_CACHE, else HF_HOME/hub, else XDG_CACHE_HOME/huggingface/hub, else root's home
    (the image's user)."""
    values = {str(e.get("name")): e.get("value") for e in container.get("env") or []
              if isinstance(e, Mapping) and isinstance(e.get("value"), str)}
    v = parse_version(version_from_image(str(container.get("image") or "")) or "") or NEWEST_RELEASE
    names = (TRANSFORMERS4_CACHES if v < TRANSFORMERS5_SINCE else ()) + HUB_CACHES
    for name in names:
        if values.get(name):
            return posixpath.normpath(values[name])
    if values.get("HF_HOME"):
        return posixpath.join(posixpath.normpath(values["HF_HOME"]), "hub")
    if values.get("XDG_CACHE_HOME"):
        return posixpath.join(posixpath.normpath(values["XDG_CACHE_HOME"]), "huggingface", "hub")
    return posixpath.join(home(container), ".cache", "huggingface", "hub")


#: The key :func:`with_pod_volumes` adds to the rehearsal's copy of the container: the pod's ``runAsUser`` where the
#: container sets none of its own (a container's securityContext overrides the pod's).
USER = "x-vllm-remedy-run-as-user"


def run_as(container: Mapping[str, Any]) -> int | None:
    """The UID the container runs as when the pod says (None: the image's user, root in vLLM's images)."""
    own = (container.get("securityContext") or {}).get("runAsUser")
    uid = own if own is not None else container.get(USER)
    return uid if isinstance(uid, int) and not isinstance(uid, bool) else None


def home(container: Mapping[str, Any]) -> str:
    """The container's HOME: its env's, else root's home for the image's user; a UID of its own that the image's
    /etc/passwd does not list (an arbitrary one, as OpenShift assigns: vllm-project/vllm#10185) gets "/", as the
    container runtime gives a user it cannot find."""
    for e in container.get("env") or []:
        if isinstance(e, Mapping) and e.get("name") == "HOME" and isinstance(e.get("value"), str) and e["value"]:
            return posixpath.normpath(e["value"])
    return ROOT_HOME if not run_as(container) else "/"


def mount_of(container: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The mount the pod's cache lies on (the deepest one holding it), None: the container's own filesystem."""
    cache = cache_of(container)
    best: tuple[int, Mapping[str, Any]] | None = None
    for mount in container.get("volumeMounts") or []:
        if not isinstance(mount, Mapping) or not isinstance(mount.get("mountPath"), str):
            continue
        root = posixpath.normpath(mount["mountPath"])
        if (cache == root or cache.startswith(root.rstrip("/") + "/")) and (best is None or len(root) > best[0]):
            best = (len(root), mount)
    return best[1] if best is not None else None


#: vLLM's own images (``vllm/vllm-openai``, ``vllm/vllm-openai-rocm`` ...), on Docker Hub or a mirror of it: no model
#: is baked into them, so a cache on the container's own filesystem starts empty.
_VLLM_IMAGE = re.compile(r"(?:^|/)vllm/vllm-[\w.-]+$")


def unseen(container: Mapping[str, Any]) -> tuple[str, str | None]:
    """(the pod's cache path, why this machine cannot tell what it holds at start; None: it holds nothing, the
    container's own filesystem in one of vLLM's images). A volume there may have been filled by earlier pods or an
    init container (an emptyDir too); another image may carry the model in its layers."""
    path = cache_of(container)
    mount = mount_of(container)
    if mount is not None:
        return path, f"on the volume {mount.get('name')!r} mounted at {mount.get('mountPath')}, which is not read here"
    name = str(container.get("image") or "").strip().split("@", 1)[0]
    repo, _, tag = name.rpartition(":")
    repo = name if not repo or "/" in tag else repo
    if not _VLLM_IMAGE.search(repo):
        return path, f"in the image {container.get('image')!r}, which is not vLLM's own and may hold the model"
    return path, None
