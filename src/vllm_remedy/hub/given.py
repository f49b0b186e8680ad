"""Whom the Hub gave each cached config.json to in this process: a copy another pod's download put in the cache is
no answer for a pod whose own cache would not hold it.

huggingface_hub (and so vLLM) falls back to its cache when the Hub's answer is an HTTP error, a gated repository's
401 included (``_get_metadata_or_catch_error`` keeps the error, then the cached pointer is returned), and reads a
commit's cached snapshot without asking, so a pod whose cache holds the file starts although the Hub would refuse
it. That cache is the pod's own: what its vLLM downloaded with its own token from its own HF_ENDPOINT. The rehearsal
cluster keeps one cache for every pod, so a copy fetched with one pod's token must not become the answer to a pod
without one (nor to one pointed at another mirror). Each download is recorded with :func:`hub.pod.key` of the
environment it was made for, each revalidation with the key the Hub confirmed it to; a copy already on disk that no
one fetched in this process is the cache's own (a world's seeded cache volume) and answers for every pod, as before.
A pod offline by its own HF_HUB_OFFLINE asks no Hub, so nothing is given to it: whether another pod's download is in
its cache hangs on the volume the cache lies on (``sim.vllm_pod.hf_cache.check_offline``).
"""

from __future__ import annotations

import os
import threading
from typing import Any

Key = tuple[Any, ...]
#: the cached snapshot's path -> the :func:`hub.pod.key` values whose download put it there in this process
_fetched: dict[str, set[Key]] = {}
#: the cached snapshot's path -> the keys the Hub gave it to or revalidated it for in this process
_given: dict[str, set[Key]] = {}
_lock = threading.Lock()


def record(path: str, key: Key, downloaded: bool) -> None:
    """The Hub has just given the file at ``path`` to ``key``'s environment: downloaded, or revalidated in place."""
    where = os.path.realpath(path)
    with _lock:
        _given.setdefault(where, set()).add(key)
        if downloaded:
            _fetched.setdefault(where, set()).add(key)


def others(path: str, key: Key) -> bool:
    """Whether the copy at ``path`` is another environment's: downloaded in this process, and never given to
    ``key``'s (so this pod's own cache would not hold it)."""
    where = os.path.realpath(path)
    with _lock:
        return bool(_fetched.get(where)) and key not in _given.get(where, ())


def known(path: str) -> bool:
    """Whether the copy at ``path`` was downloaded in this process (to anyone), not found on disk."""
    with _lock:
        return bool(_fetched.get(os.path.realpath(path)))
