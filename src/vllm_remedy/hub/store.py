"""Writing a fetched config.json into the Hugging Face cache in huggingface_hub's own layout.

``hub.ask`` downloads a config with one GET of its own (``hf_hub_download`` always sends a HEAD first, even for a
commit it does not hold), so it also places the file where ``hf_hub_download`` would: the bytes in
``blobs/<etag>``, ``snapshots/<commit>/config.json`` a relative link to that blob (a copy where links cannot be made),
and ``refs/<revision>`` holding the commit a branch or tag named. ``try_to_load_from_cache``, ``HF_HUB_OFFLINE=1``
runs and vLLM itself then read it as if huggingface_hub had fetched it. Every write is a temporary file renamed into
place, so a reader (or a second process writing the same file) never sees half of one.

Every path written is checked, after resolving links, to lie inside the repository's folder (:class:`Outside`
else), and a revision must be a ref name (``hub.names``) before it names ``refs/<revision>``: the revision and the
repository id come from manifests, and this process may run as root on an operator's or CI machine. A cache that
cannot be written raises (an ``OSError``) from :func:`save`; the caller then uses the bytes it holds.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path

from vllm_remedy.hub.names import revision_problem

CONFIG = "config.json"
COMMIT = re.compile(r"[0-9a-f]{40}")


class Outside(OSError):
    """A path the store would write resolves outside the repository's folder in the cache: nothing is written."""


def save(cache: str | None, repo_id: str, revision: str, commit: str, etag: str, body: bytes,
         filename: str = CONFIG) -> str:
    """The snapshot path of ``body`` (``repo_id``'s config.json, or ``filename``, at ``commit``) after writing it into
    ``cache`` (None: huggingface_hub's default cache); ``commit`` and ``etag`` were checked to be plain names. An
    ``OSError`` when the cache cannot be written (read-only, full, or :class:`Outside`)."""
    folder = _folder(cache, repo_id)
    blob = _inside(folder, folder / "blobs" / etag)
    pointer = _inside(folder, snapshot(cache, repo_id, commit, filename))
    if not blob.is_file():
        blob.parent.mkdir(parents=True, exist_ok=True)
        _replace(blob, lambda tmp: tmp.write_bytes(body))
    if not pointer.is_file():
        pointer.parent.mkdir(parents=True, exist_ok=True)
        try:
            _replace(pointer, lambda tmp: tmp.symlink_to(os.path.relpath(blob, pointer.parent)))
        except OSError:  # a filesystem without links: a copy, as huggingface_hub makes there
            _replace(pointer, lambda tmp: shutil.copyfile(blob, tmp))
    point(cache, repo_id, revision, commit)
    return str(pointer)


def snapshot(cache: str | None, repo_id: str, commit: str, filename: str = CONFIG) -> Path:
    """Where ``filename`` of ``repo_id`` at ``commit`` lives in the cache (whether or not it is there)."""
    return _folder(cache, repo_id) / "snapshots" / commit / filename


def absent(cache: str | None, repo_id: str, commit: str, filename: str) -> None:
    """Record that ``repo_id`` has no ``filename`` at ``commit`` where ``hf_hub_download`` records it
    (``.no_exist/<commit>/<filename>``), so ``try_to_load_from_cache`` answers "absent" with no request. Best effort."""
    try:
        folder = _folder(cache, repo_id)
        marker = _inside(folder, folder / ".no_exist" / commit / filename)
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.touch()
    except (OSError, ValueError):
        pass


def _folder(cache: str | None, repo_id: str) -> Path:
    """The repository's folder in the cache; ``repo_id`` checked as huggingface_hub checks it (a ValueError else)."""
    from huggingface_hub import constants
    from huggingface_hub.utils import validate_repo_id

    validate_repo_id(repo_id)
    return Path(cache or constants.HF_HUB_CACHE) / ("models--" + repo_id.replace("/", "--"))


def _inside(folder: Path, path: Path) -> Path:
    """``path`` when its folder, links resolved, lies inside ``folder`` (the file itself is replaced by a rename, so
    a link in its place is replaced, not followed); :class:`Outside` else."""
    root, where = folder.resolve(), path.parent.resolve()
    if where != root and root not in where.parents:
        raise Outside(errno.EPERM, f"refused: resolves outside {root}", str(path))
    return path


def point(cache: str | None, repo_id: str, revision: str, commit: str) -> None:
    """Point the cache's ``refs/<revision>`` at ``commit``, as ``hf_hub_download`` does, so an offline run later
    reads the config the Hub named last. Best effort: a read-only cache is still read. A revision that is no ref
    name, or a path that resolves outside the repository's folder, is never written."""
    if COMMIT.fullmatch(revision) or revision_problem(revision):
        return
    try:
        folder = _folder(cache, repo_id)
        refs = _inside(folder, folder / "refs" / revision)
        if not refs.is_file() or refs.read_text() != commit:
            refs.parent.mkdir(parents=True, exist_ok=True)
            _replace(refs, lambda tmp: tmp.write_text(commit))
    except (OSError, ValueError):
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
