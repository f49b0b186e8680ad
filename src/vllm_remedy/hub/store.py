"""Writing a fetched config.json into the Hugging Face cache in huggingface_hub's own layout.

``hub.ask`` downloads a config with one GET of its own (``hf_hub_download`` always sends a HEAD first, even for a
commit it does not hold), so it also places the file where ``hf_hub_download`` would: the bytes in
``blobs/<etag>``, ``snapshots/<commit>/config.json`` a relative link to that blob (a copy where links cannot be made),
and ``refs/<revision>`` holding the commit a branch or tag named. ``try_to_load_from_cache``, ``HF_HUB_OFFLINE=1``
runs and vLLM itself then read it as if huggingface_hub had fetched it. Every write is a temporary file renamed into
place, so a reader (or a second process writing the same file) never sees half of one.
"""

from __future__ import annotations

import os
import re
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path

CONFIG = "config.json"
COMMIT = re.compile(r"[0-9a-f]{40}")


def save(cache: str | None, repo_id: str, revision: str, commit: str, etag: str, body: bytes,
         filename: str = CONFIG) -> str:
    """The snapshot path of ``body`` (``repo_id``'s config.json, or ``filename``, at ``commit``) after writing it into
    ``cache`` (None: huggingface_hub's default cache); ``commit`` and ``etag`` were checked to be plain names."""
    folder = _folder(cache, repo_id)
    blob = folder / "blobs" / etag
    pointer = folder / "snapshots" / commit / filename
    if not blob.is_file():
        blob.parent.mkdir(parents=True, exist_ok=True)
        _replace(blob, lambda tmp: tmp.write_bytes(body))
    if not pointer.is_file():
        pointer.parent.mkdir(parents=True, exist_ok=True)
        try:
            _replace(pointer, lambda tmp: tmp.symlink_to(os.path.relpath(blob, pointer.parent)))
        except OSError:  # a filesystem without links: a copy, as huggingface_hub makes there
            _replace(pointer, lambda tmp: shutil.copyfile(blob, tmp))
    point(str(pointer), revision, commit)
    return str(pointer)


def absent(cache: str | None, repo_id: str, commit: str, filename: str) -> None:
    """Record that ``repo_id`` has no ``filename`` at ``commit`` where ``hf_hub_download`` records it
    (``.no_exist/<commit>/<filename>``), so ``try_to_load_from_cache`` answers "absent" with no request. Best effort."""
    marker = _folder(cache, repo_id) / ".no_exist" / commit / filename
    try:
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.touch()
    except OSError:
        pass


def _folder(cache: str | None, repo_id: str) -> Path:
    from huggingface_hub import constants

    return Path(cache or constants.HF_HUB_CACHE) / ("models--" + repo_id.replace("/", "--"))


def point(snapshot: str, revision: str, commit: str) -> None:
    """Point the cache's ``refs/<revision>`` at ``commit``, as ``hf_hub_download`` does, so an offline run later
    reads the config the Hub named last. Best effort: a read-only cache is still read."""
    if COMMIT.fullmatch(revision) or ".." in Path(revision).parts:
        return
    refs = Path(snapshot).parents[2] / "refs" / revision  # <repo folder>/snapshots/<commit>/config.json
    try:
        if not refs.is_file() or refs.read_text() != commit:
            refs.parent.mkdir(parents=True, exist_ok=True)
            _replace(refs, lambda tmp: tmp.write_text(commit))
    except OSError:
        pass


def _replace(path: Path, make: Callable[[Path], object]) -> None:
    """``make(tmp)`` on a temporary name beside ``path``, then rename it into place."""
    tmp = path.with_name(f"{path.name}.{uuid.uuid4().hex[:8]}.incomplete")
    try:
        make(tmp)
        os.replace(tmp, path)
    finally:
        if tmp.is_symlink() or tmp.exists():
            tmp.unlink()
