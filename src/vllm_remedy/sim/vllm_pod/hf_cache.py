"""A rehearsal pod whose Hugging Face cache is a read-only volume: what its vLLM can still read, and what it dies on.

huggingface_hub writes into the cache before it returns a download (``hf_hub_download``: the repository's folder,
``refs/<revision>``, the blob, the snapshot link), and neither it nor transformers turns a refused write into
anything else. Measured with huggingface_hub 2.4 against tests/fixtures/hf_hub_server, on a cache made unwritable:
an empty cache fails online at the first write (``<cache>/models--<org>--<name>``) and offline as not cached; a
cache holding the revision's commit serves online (the HEAD names that commit: nothing to write) and offline; after
the revision moves to a commit the cache lacks, the download fails at its snapshot folder. A ``readOnly`` volume
mount refuses with EROFS, an ``OSError`` that is no ``PermissionError``, so transformers re-raises it as it is
(utils/hub.py ``cached_files``: ``raise e``) in every release's path to config.json (``hub_refusal``):
``OSError: [Errno 30] Read-only file system: '<cache>/models--<org>--<name>'``.

The rehearsal keeps one Hugging Face cache for the cluster. A read-only pod's volume holds what was put there before
the pod ran, which the rehearsal stands for with copies in that cache that no one fetched in this process (a seeded
cache, ``hub.given``); a config the cluster had to download, or one another pod fetched, is not on the pod's volume.
A mount is read-only when the container says so (``volumeMounts[].readOnly``) or when the pod's volume is: the
kubelet mounts ConfigMap, Secret, downwardAPI and projected volumes read-only whatever the mount says (since
Kubernetes 1.10, ReadOnlyAPIDataVolumes), an image volume too, and a volume source with ``readOnly: true`` (a
``persistentVolumeClaim``, ``csi``, ``nfs`` ...) read-only in every container (:func:`with_pod_volumes`).

A pod run as a UID of its own has "/" for HOME unless its env says otherwise (:func:`home`), so its default cache is
``/.cache/huggingface/hub``, which that user may not create (``hub_cache_denied``).

A pod offline by its own HF_HUB_OFFLINE (or TRANSFORMERS_OFFLINE, its other name: ``hub.pod``) reads its own cache
and nothing else (huggingface_hub's ``local_files_only``): a copy another pod of this process downloaded is not there
when the pod's cache is its own (the container's filesystem, an emptyDir), and may be when it lies on storage pods
share (a PVC, hostPath, NFS: a Deployment's earlier pods filled it), which is then read (:func:`check_offline`). The
cache's path and mount are read from the container alone (``hub.pod_cache``, which ``check`` reads as well).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from vllm_remedy import hub
from vllm_remedy.hub import given, pod
from vllm_remedy.hub.pod_cache import DEFAULT_HOME as DEFAULT_HOME
from vllm_remedy.hub.pod_cache import HUB_CACHES as HUB_CACHES
from vllm_remedy.hub.pod_cache import ROOT_HOME as ROOT_HOME
from vllm_remedy.hub.pod_cache import TRANSFORMERS4_CACHES as TRANSFORMERS4_CACHES
from vllm_remedy.hub.pod_cache import TRANSFORMERS5_SINCE as TRANSFORMERS5_SINCE
from vllm_remedy.hub.pod_cache import USER as USER
from vllm_remedy.hub.pod_cache import cache_of as cache_of
from vllm_remedy.hub.pod_cache import home as home
from vllm_remedy.hub.pod_cache import mount_of as mount_of
from vllm_remedy.hub.pod_cache import run_as as run_as

_CACHED = re.compile(r"^the local Hugging Face cache \((?P<path>[^)]*)\)")


class ReadOnlyCache(hub.Unresolved):
    """The pod's vLLM would have to write the config into a cache on a read-only volume; ``path``: the cache."""

    def __init__(self, message: str, path: str) -> None:
        super().__init__(message)
        self.path = path


def read_only(container: Mapping[str, Any]) -> str | None:
    """The pod's cache path when the mount it lies on is ``readOnly`` (the deepest mount holding it decides), else
    None."""
    mount = mount_of(container)
    return cache_of(container) if mount is not None and mount.get("readOnly") else None


#: The key :func:`with_pod_volumes` adds to a mount of the rehearsal's copy of the container: the kind of the pod's
#: volume it mounts (``emptyDir``, ``persistentVolumeClaim`` ...), which a Kubernetes volumeMount does not carry.
KIND = "x-vllm-remedy-volume"
#: Volumes that start empty with the pod and that no other pod writes into (a generic ephemeral volume is a claim made
#: for the pod alone).
PER_POD = ("emptyDir", "ephemeral")


def own_only(container: Mapping[str, Any]) -> bool:
    """Whether the pod's cache holds nothing another pod downloaded: it lies on the container's own filesystem or on a
    per-pod volume (:data:`PER_POD`), not on storage pods can share (a PVC, hostPath, NFS: one pod's download is
    there for the next)."""
    mount = mount_of(container)
    return mount is None or mount.get(KIND) in PER_POD


def check_offline(model_id: str, source: str, container: Mapping[str, Any], endpoint: str) -> None:
    """A pod offline by its own HF_HUB_OFFLINE reads its own cache only (huggingface_hub's ``local_files_only``: the
    pod's HF_HUB_CACHE, nothing else): a ``hub.Unresolved`` "offline" when the copy read (``source``) is one another pod
    downloaded in this process and the pod's cache is its own (:func:`own_only`). A copy no one fetched here is the
    seeded volume's, which every pod has."""
    held = _CACHED.match(source)
    if held is None or not given.known(held["path"]) or not own_only(container):
        return
    by = pod.offline_by(pod.from_container(container))  # HF_HUB_OFFLINE, or its other name TRANSFORMERS_OFFLINE
    raise hub.Unresolved(f"model {model_id}: {by} is set in the pod and its own Hugging Face cache "
                         f"({cache_of(container)}) lacks config.json; the copy in the cluster's cache is another "
                         "pod's download").said("offline", endpoint)


#: Volume sources the kubelet always mounts read-only (kubernetes/kubernetes#58720; an ``image`` volume, KEP-4639)
ALWAYS_READ_ONLY = ("configMap", "secret", "downwardAPI", "projected", "image")


def with_pod_volumes(container: Mapping[str, Any], pod: Mapping[str, Any]) -> Mapping[str, Any]:
    """``container`` with ``readOnly`` set on each mount of a volume the pod makes read-only (see the module), so
    :func:`read_only` judges the mount as the kubelet makes it, each mount's volume kind (:data:`KIND`, for
    :func:`own_only`) and the pod's ``runAsUser`` (:data:`USER`, for :func:`run_as`); ``container`` itself when
    none of these applies."""
    volumes = {str(v.get("name")): v for v in (pod.get("spec") or {}).get("volumes") or [] if isinstance(v, Mapping)}
    mounts = [m for m in container.get("volumeMounts") or [] if isinstance(m, Mapping)]
    fixed = [_judged(m, volumes.get(str(m.get("name")))) for m in mounts]
    judged = {**container, "volumeMounts": fixed} if fixed != mounts else container
    uid = ((pod.get("spec") or {}).get("securityContext") or {}).get("runAsUser")
    own = (container.get("securityContext") or {}).get("runAsUser")
    return {**judged, USER: uid} if uid is not None and own is None else judged  # the pod's user (:func:`run_as`)


def _judged(mount: Mapping[str, Any], volume: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """The mount with the volume's kind (:data:`KIND`) and, when the volume is read-only, ``readOnly``."""
    if volume is None:
        return mount
    kind = next((key for key in volume if key != "name"), None)
    return {**mount, KIND: kind, "readOnly": bool(mount.get("readOnly")) or _read_only_volume(volume)}


def _read_only_volume(volume: Mapping[str, Any]) -> bool:
    return any(key in ALWAYS_READ_ONLY or (isinstance(source, Mapping) and source.get("readOnly") is True)
               for key, source in volume.items() if key != "name")


def check(model_id: str, source: str, cache: str) -> None:
    """:class:`ReadOnlyCache` when the config read from ``source`` (``hub.resolve``'s) is not on the pod's read-only
    volume: the Hub sent it (a download the pod cannot write), or another pod of this process fetched it."""
    held = _CACHED.match(source)
    if held is not None and not given.known(held["path"]):
        return
    raise ReadOnlyCache(f"model {model_id}: its config.json is not in the pod's Hugging Face cache ({cache}), a "
                        "read-only volume: vLLM's download of it cannot be written", cache)


def words(model_id: str, cache: str) -> str:
    """The error the pod ends in: the first write huggingface_hub tries, refused by the read-only mount."""
    return f"OSError: [Errno 30] Read-only file system: '{cache}/models--{model_id.replace('/', '--')}'"
