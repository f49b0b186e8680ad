"""The AWQ Marlin load replay's results kept on disk, so a shape outside ``awq_marlin_table`` is replayed once per
machine, not once per process.

Why: the replay of an 80-layer model costs ~10 ms of CPU in a fresh process (most of it the CPython floor of ~20,000
allocator requests), twice the 5 ms an estimate may take once its config is resolved; every ``vllm-remedy estimate``
or deploy run is a fresh process. The result is a pure function of its inputs, so it is memoized:

* **Where**: the Hugging Face assets cache, ``<HF_ASSETS_CACHE>/vllm-remedy/awq-marlin/`` — beside the hub cache that
  holds the resolved models' config.json (``HF_HOME/hub``), read the way huggingface_hub's ``constants`` reads it
  (``HF_ASSETS_CACHE``, else ``HUGGINGFACE_ASSETS_CACHE``, else ``HF_HOME/assets``, ``HF_HOME`` defaulting to
  ``$XDG_CACHE_HOME/huggingface`` or ``~/.cache/huggingface``): the folder ``huggingface_hub.cached_assets_path``
  gives libraries for derived files, which ``hf cache scan`` does not mistake for a repository. Read at each call,
  as ``hub.cache_dir`` reads its variables.
* **Key**: the replay's inputs (shapes, layers, vocabulary, rotary length, TP, dtype bytes), the release rule (the
  span of releases whose load sequence is replayed, and the load's split limit) and a digest of the replay's code
  (``alloc_sim``, ``alloc_pools``, ``awq_marlin_load`` as the process imported them): any change to that code makes
  new keys, so no entry written by other code is ever read. The packaged table is looked up first and the memo holds
  only what the replay computed, so a table change needs no new key. The digest is zlib's CRC-32 and Adler-32 of
  the modules' bytes with their lengths (zlib is already loaded; importing hashlib loads OpenSSL, ~2 ms a process):
  a check against accidental staleness, not against tampering with the code.
* **Files**: one small JSON file per key, in a folder per code digest, named by the rule and inputs and holding the
  whole key, checked on read with the bytes' own sanity (three integers, requested <= allocated <= reserved).
  Written to a unique temporary in the same folder then ``os.replace``-d: a reader sees no file or a whole one, and
  two writers of one key write the same bytes. Not fsync'd: a file a crash left empty or torn fails the checks and
  is replayed and rewritten.
* **Failure**: a folder that cannot be made or written, a file unreadable, corrupt, foreign or not a regular file,
  a module whose code cannot be read: the replay runs and its result is used (never an error, never a wrong number).
  The folder is trusted as the hub cache beside it is (whoever can write there can also rewrite the config.json the
  estimate reads): the checks catch damage, not a forged entry.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import sys
import tempfile
import zlib
from collections.abc import Callable, Iterable
from functools import lru_cache
from pathlib import Path

FORMAT = 1
SUBDIR = ("vllm-remedy", "awq-marlin")
MAX_FILE_BYTES = 4096  # an entry is ~400 bytes; anything larger is not one of ours
# The modules whose code the replay's bytes depend on.
CODE_MODULES = ("vllm_remedy.vllm.memory.alloc_sim", "vllm_remedy.vllm.memory.alloc_pools",
                "vllm_remedy.vllm.memory.awq_marlin_load")

Triple = tuple[int, int, int]


def assets_dir() -> Path:
    """huggingface_hub's ``HF_ASSETS_CACHE`` as its ``constants`` module would compute it now (not imported: the
    estimate path does not load huggingface_hub)."""
    explicit = os.environ.get("HF_ASSETS_CACHE") or os.environ.get("HUGGINGFACE_ASSETS_CACHE")
    if explicit:
        return Path(os.path.expandvars(os.path.expanduser(explicit)))
    home = os.environ.get("HF_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "huggingface")
    return Path(os.path.expandvars(os.path.expanduser(home))) / "assets"


def memo_dir() -> Path:
    return assets_dir().joinpath(*SUBDIR)


@lru_cache(maxsize=1)
def code_digest() -> str | None:
    """CRC-32, Adler-32 and length of the replay's modules as imported, in order (None when one cannot be read:
    then nothing is memoized)."""
    data = [f"format {FORMAT}".encode()]
    for name in CODE_MODULES:
        path = getattr(sys.modules.get(name), "__file__", None)
        if not path:
            return None
        try:
            data.append(Path(path).read_bytes())
        except OSError:
            return None
    joined = b"\0".join(data)
    return f"{zlib.crc32(joined):08x}{zlib.adler32(joined):08x}{len(joined):x}"


def entry_key(inputs: Iterable[int | bool], rule: Iterable[int | bool]) -> dict | None:
    """What an entry is keyed by, as stored in its file (None: no code digest, no memo)."""
    digest = code_digest()
    if digest is None:
        return None
    return {"format": FORMAT, "code": digest, "rule": [int(v) for v in rule], "inputs": [int(v) for v in inputs]}


def entry_path(key: dict) -> Path:
    name = "-".join(str(v) for v in (*key["rule"], *key["inputs"]))
    return memo_dir() / key["code"] / f"{name}.json"


def read(key: dict) -> Triple | None:
    """The triple stored under ``key``, or None for a missing, unreadable, corrupt or foreign file. Opened without
    blocking and read only when a small regular file (a FIFO or device in its place is not waited on)."""
    try:
        fd = os.open(entry_path(key), os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except (OSError, ValueError):
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE_BYTES:
            return None
        data = os.read(fd, MAX_FILE_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError):
        return None
    if not isinstance(doc, dict) or doc.get("key") != key:
        return None
    got = doc.get("bytes")
    if (not isinstance(got, list) or len(got) != 3 or any(type(v) is not int for v in got)
            or not 0 <= got[0] <= got[1] <= got[2]):
        return None
    return got[0], got[1], got[2]


def write(key: dict, value: Triple) -> None:
    """Store ``value`` under ``key``: a unique temporary in the memo folder, renamed into place. Best effort."""
    try:
        path = entry_path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
    except (OSError, ValueError):
        return
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump({"key": key, "bytes": list(value)}, fh, sort_keys=True)
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; the entry holds nothing private, a shared cache may read it
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def memoized(inputs: Iterable[int | bool], rule: Iterable[int | bool], compute: Callable[[], Triple]) -> Triple:
    """The stored result for ``inputs`` under ``rule`` and the current code, else ``compute()``, stored."""
    key = entry_key(inputs, rule)
    if key is not None:
        got = read(key)
        if got is not None:
            return got
    value = compute()
    if key is not None:
        write(key, value)
    return value
