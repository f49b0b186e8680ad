"""Whom the Hub gave each cached config.json to in this process: a cached copy answers only for the environments
that got it.

huggingface_hub (and so vLLM) falls back to its cache when the Hub's answer is an HTTP error, a gated repository's
401 included (``_get_metadata_or_catch_error`` keeps the error, then the cached pointer is returned), so a pod whose
cache holds the file starts although the Hub now refuses it. That cache is the pod's own: what its vLLM downloaded
with its own token from its own HF_ENDPOINT. The rehearsal cluster keeps one cache for every pod, so a copy fetched
with one pod's token must not become the answer to a pod without one (nor to one pointed at another mirror): each
copy is recorded with :func:`hub.pod.key` of the environment the Hub gave it to, and stands in for a refusal only
for that key.
"""

from __future__ import annotations

import os
import threading
from typing import Any

#: the cached snapshot's path -> the :func:`hub.pod.key` values the Hub gave it to (or revalidated it for)
_given: dict[str, set[tuple[Any, ...]]] = {}
_lock = threading.Lock()


def record(path: str, key: tuple[Any, ...]) -> None:
    """The Hub has just given (or revalidated) the file at ``path`` to the environment ``key`` stands for."""
    with _lock:
        _given.setdefault(os.path.realpath(path), set()).add(key)


def to(path: str, key: tuple[Any, ...]) -> bool:
    """Whether the copy at ``path`` came from the Hub to ``key``'s environment in this process."""
    with _lock:
        return key in _given.get(os.path.realpath(path), ())



def others(path: str, key: tuple[Any, ...]) -> bool:
    """Whether the copy at ``path`` came from the Hub in this process, to other environments only (a copy found on
    disk, no one's in this process, is the cache's own: a world's seeded cache volume)."""
    with _lock:
        got = _given.get(os.path.realpath(path))
        return bool(got) and key not in got
