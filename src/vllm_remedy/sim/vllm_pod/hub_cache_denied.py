"""A rehearsal pod whose user may not write its Hugging Face cache: errno 13 at huggingface_hub's first mkdir.

A pod that runs vLLM's image as a UID of its own (``runAsUser``, on the pod or the container) with no HOME gets "/"
(``hf_cache.home``), so its cache is ``/.cache/huggingface/hub`` on the container's filesystem, whose root-owned
folders that user cannot write into (vllm-project/vllm#10185; huggingface/inference-benchmarker#30, vLLM 0.9.1 on
OpenShift). ``hf_hub_download`` asks the Hub first, then creates the blob's folder with ``os.makedirs``, which
fails at the first folder it must create: ``PermissionError: [Errno 13] Permission denied: '/.cache'``; transformers'
``cached_files`` turns it into its own ``OSError: PermissionError at <path> when downloading <repo>. Check cache
directory permissions ...``, the PermissionError its cause. Measured as a non-root user with HOME=/ against
tests/fixtures/hf_hub_server: transformers 4.57.1 / huggingface_hub 0.35.3 and 5.0.0 / 1.33.0 (:data:`FRAMES`), the
same words and lines in both but the callers'. Every release reads config.json through that download (``hub_refusal``
names which vLLM call gets there first); nothing is written before it (a HEAD, a file listing).

Judged only where it is certain: the cache on the container's own filesystem (the image has no cache in it, so the
config must be downloaded) and outside its world-writable folders (:data:`WRITABLE`). A volume's owner is not known
here (an emptyDir is world-writable; a claim may be the pod's group through ``fsGroup`` or not), so a cache on a
volume is not judged; HF_HUB_OFFLINE writes nothing.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from typing import Any

from vllm_remedy import hub
from vllm_remedy.sim.vllm_pod import hf_cache, hub_frames
from vllm_remedy.sim.vllm_pod.hub_refusal import CAUSE

SITE = hub_frames.SITE
#: folders of a vLLM image any user may write into
WRITABLE = ("/tmp", "/var/tmp", "/dev/shm")
#: the image's top-level folders (the Linux file system hierarchy, and vLLM's ``WORKDIR /vllm-workspace``): a path
#: below one of them is created one level deeper than a path below "/"
IMAGE_DIRS = ("/bin", "/boot", "/etc", "/home", "/lib", "/lib64", "/media", "/mnt", "/opt", "/root", "/run", "/sbin",
              "/srv", "/usr", "/var", "/vllm-workspace")
_FN = "return fn(*args, **kwargs)"
_DOWNLOAD = "return _hf_hub_download_to_cache_dir("
_MAKEDIRS = "os.makedirs(os.path.dirname(blob_path), exist_ok=True)"
#: transformers major -> the frames from cached_files' download to huggingface_hub's makedirs (4.57.1 / 0.35.3,
#: 5.0.0 / 1.33.0)
FRAMES: dict[int, tuple[tuple[str, int, str, str], ...]] = {
    4: (("transformers/utils/hub.py", 479, "cached_files", "hf_hub_download("),
        ("huggingface_hub/utils/_validators.py", 114, "_inner_fn", _FN),
        ("huggingface_hub/file_download.py", 1010, "hf_hub_download", _DOWNLOAD),
        ("huggingface_hub/file_download.py", 1127, "_hf_hub_download_to_cache_dir", _MAKEDIRS)),
    5: (("transformers/utils/hub.py", 419, "cached_files", "hf_hub_download("),
        ("huggingface_hub/utils/_validators.py", 89, "_inner_fn", _FN),
        ("huggingface_hub/utils/_http.py", 266, "_inner", _FN),
        ("huggingface_hub/file_download.py", 1047, "hf_hub_download", _DOWNLOAD),
        ("huggingface_hub/file_download.py", 1233, "_hf_hub_download_to_cache_dir", _MAKEDIRS)),
}
#: os.makedirs' recursion and its mkdir (Python 3.12's os.py l.215 and l.225, as 3.10 and 3.11)
RECURSE, MKDIR = 215, 225


class CacheDenied(hub.Unresolved):
    """The pod's user may not create its cache's folders; ``path``: the first one huggingface_hub's makedirs tries."""

    def __init__(self, message: str, path: str, container: Mapping[str, Any]) -> None:
        super().__init__(message)
        self.path, self.container = path, container


def _blobs(container: Mapping[str, Any], model_id: str) -> str:
    return posixpath.join(hf_cache.cache_of(container), f"models--{model_id.replace('/', '--')}", "blobs")


def denied(container: Mapping[str, Any], model_id: str) -> str | None:
    """The folder the pod's user fails to create for ``model_id``'s download (see the module), or None."""
    if not hf_cache.run_as(container) or hf_cache.mount_of(container) is not None:
        return None
    blobs = _blobs(container, model_id)
    if any(blobs == w or blobs.startswith(w + "/") for w in WRITABLE):
        return None
    top = "/" + blobs.strip("/").split("/")[0]
    if top not in IMAGE_DIRS:
        return top
    below = blobs[len(top) + 1:].split("/")[0]
    return posixpath.join(top, below)


def check(model_id: str, container: Mapping[str, Any], offline: bool) -> None:
    """:class:`CacheDenied` when the pod's vLLM has to download config.json into a cache its user cannot create."""
    path = None if offline else denied(container, model_id)
    if path is not None:
        raise CacheDenied(f"model {model_id}: the pod's user ({hf_cache.run_as(container)}) may not create its "
                          f"Hugging Face cache ({hf_cache.cache_of(container)}): vLLM's download of config.json "
                          f"fails at {path} (errno 13)", path, container)


def words(v: tuple[int, ...], model_id: str, path: str, container: Mapping[str, Any]) -> str:
    """The pod's log tail: huggingface_hub's PermissionError (its frames, os.makedirs' recursion as Python prints it),
    then transformers' OSError raised from it."""
    major = 5 if tuple(v) >= hub_frames.TRANSFORMERS_5_SINCE else 4
    lines = []
    for file, line, function, code in FRAMES[major]:
        lines += [f'  File "{SITE}/{file}", line {line}, in {function}', f"    {code}"]
    depth = len(posixpath.relpath(_blobs(container, model_id), posixpath.dirname(path)).split("/"))
    recursing = f'  File "<frozen os>", line {RECURSE}, in makedirs'
    more = depth - 1 - 3
    lines += [recursing] * min(depth - 1, 3)
    if more > 0:  # Python prints a frame repeated more than three times once with a count
        lines.append(f"  [Previous line repeated {more} more time{'s' if more > 1 else ''}]")
    lines += [f'  File "<frozen os>", line {MKDIR}, in makedirs', f"PermissionError: [Errno 13] Permission denied: "
              f"'{path}'", CAUSE, *hub_frames.outer(v, "permission"),
              f"OSError: PermissionError at {path} when downloading {model_id}. Check cache directory permissions. "
              "Common causes: 1) another user is downloading the same model (please wait); 2) a previous download "
              "was canceled and the lock file needs manual removal."]
    return "\n".join(lines)
