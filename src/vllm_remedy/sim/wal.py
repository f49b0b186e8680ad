"""The rehearsal cluster's write-ahead log: an acknowledged write survives ``kill -9``, as with etcd.

Why: state used to be flushed about once a second, so a crash lost writes the API had already
answered 2xx. Now every store change is appended here (under the store lock, so the log is in
resourceVersion order) and the HTTP layer calls ``sync()`` — one ``fdatasync`` shared by every
writer waiting at that moment (group commit) — before it sends the response.

On disk, next to ``<cluster>.json`` (the last snapshot): segments ``<cluster>.<seq>.wal``, each a
run of records ``<u32 length><u32 crc32><JSON>``. A checkpoint starts a new segment, writes the
snapshot, then deletes older segments; replay applies records newer than the snapshot's
resourceVersion. A torn record at the end of the newest segment is a crash mid-append — never
synced, so never acknowledged — and replay stops there; damage anywhere else is refused.

resourceVersions are reserved in durable blocks (``reserve`` records, as sequence caches do), so
after a crash the counter resumes above every value any client could have seen, acknowledged or not.
"""

from __future__ import annotations

import json
import logging
import os
import struct
import threading
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)
Obj = dict[str, Any]
HEADER = struct.Struct("<II")  # payload length, crc32 of the payload
RESERVE_BLOCK = 1000  # resourceVersions made durable ahead of use: one extra fsync per this many writes


class WalCorrupt(ValueError):
    """A damaged record that a crash cannot explain (not at the tail of the newest segment)."""


def segments(directory: Path, name: str) -> list[tuple[int, Path]]:
    """(sequence, path) of ``name``'s log segments, oldest first."""
    found = []
    for path in directory.glob(f"{name}.*.wal"):
        seq = path.name[len(name) + 1:-len(".wal")]
        if seq.isdigit():
            found.append((int(seq), path))
    return sorted(found)


def fsync_dir(directory: Path) -> None:
    """Make a create, rename or unlink in ``directory`` durable (the entry lives in the directory)."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: Path, data: bytes) -> None:
    """Temp file + fsync + ``os.replace`` + directory fsync: after a crash, ``path`` is old or new, whole."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    fsync_dir(path.parent)


def encode(record: Obj) -> bytes:
    """One framed record; the crc lets replay tell a torn tail from a whole one."""
    payload = json.dumps(record, separators=(",", ":")).encode()
    return HEADER.pack(len(payload), zlib.crc32(payload)) + payload


def decode(data: bytes) -> tuple[list[Obj], int]:
    """Whole records from the start of ``data`` and the offset where the first bad or partial one begins."""
    records, offset = [], 0
    while offset + HEADER.size <= len(data):
        length, crc = HEADER.unpack_from(data, offset)
        payload = data[offset + HEADER.size:offset + HEADER.size + length]
        if len(payload) < length or zlib.crc32(payload) != crc:
            break
        try:
            records.append(json.loads(payload))
        except ValueError:
            break
        offset += HEADER.size + length
    return records, offset


@dataclass
class Recovery:
    """What replay found: how many records it applied and whether the newest segment ended torn."""

    applied: int = 0
    torn_bytes: int = 0
    resource_version: int = 0


def replay(directory: Path, name: str, store_snapshot: Obj) -> Recovery:
    """Apply ``name``'s log to ``store_snapshot`` (``Store.snapshot()`` form) in place.

    Records at or below the snapshot's resourceVersion are already in it and are skipped; the
    resourceVersion becomes the highest one used or reserved, so it never goes back.
    """
    base = int(store_snapshot.get("resourceVersion", 1))
    objects = {(e["resource"], e["object"]["metadata"].get("namespace", ""), e["object"]["metadata"]["name"]): e
               for e in store_snapshot.get("objects", [])}
    found = Recovery(resource_version=base)
    segs = segments(directory, name)
    for index, (_, path) in enumerate(segs):
        data = path.read_bytes()
        records, end = decode(data)
        if end < len(data):
            if index != len(segs) - 1:
                raise WalCorrupt(f"{path}: damaged record at byte {end} of {len(data)} (not the newest segment)")
            found.torn_bytes = len(data) - end
            log.warning("%s: dropped a torn last record (%d bytes): a crash mid-append, never acknowledged",
                        path, found.torn_bytes)
        for rec in records:
            rv = int(rec["rv"])
            found.resource_version = max(found.resource_version, rv)
            if rec["op"] == "reserve" or rv <= base:
                continue
            key = (rec["resource"], rec["namespace"], rec["name"])
            if rec["op"] == "put":
                objects[key] = {"resource": rec["resource"], "object": rec["object"]}
            else:
                objects.pop(key, None)
            found.applied += 1
    store_snapshot["objects"] = [objects[k] for k in sorted(objects)]
    store_snapshot["resourceVersion"] = found.resource_version
    return found


class Wal:
    """The open log of one cluster: ``append`` under the store lock, ``sync`` before acknowledging.

    ``ceiling`` is the highest resourceVersion already handed out or durably reserved; a record
    above it first makes a new reservation durable.
    """

    def __init__(self, directory: Path, name: str, *, ceiling: int, block: int = RESERVE_BLOCK) -> None:
        self.directory, self.name, self.block = directory, name, block
        self._lock = threading.Lock()  # fd, counters; taken by append (under the store lock)
        self._sync_lock = threading.Lock()  # one fsync at a time; waiting writers ride on it
        self._ceiling = ceiling
        self._written = self._synced = 0  # records appended / known durable, across segments
        self._fd = -1
        self._broken: OSError | None = None
        self.seq = 0
        self.fsyncs = 0
        with self._sync_lock, self._lock:
            self._open_next()

    def _open_next(self) -> None:
        """A fresh segment starting with the current reservation, durable with its directory entry."""
        existing = segments(self.directory, self.name)
        self.seq = max([self.seq, *(s for s, _ in existing)]) + 1
        path = self.directory / f"{self.name}.{self.seq:08d}.wal"
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
        self._write({"op": "reserve", "rv": self._ceiling})
        os.fsync(self._fd)
        fsync_dir(self.directory)
        self.fsyncs += 2
        self._synced = self._written

    def _write(self, record: Obj) -> None:
        view = memoryview(encode(record))
        while view:
            view = view[os.write(self._fd, view):]
        self._written += 1

    def append(self, record: Obj) -> None:
        """Log one store change (``op`` put/delete, ``rv``); called under the store lock, so in rv order.

        Not yet durable: the caller that acknowledges it calls ``sync``. A resourceVersion past the
        reservation is synced here, before the store makes it visible.
        """
        if self._broken is not None:  # a half-written record may sit at the end: nothing may follow it
            raise OSError(f"write-ahead log {self.name} failed earlier: {self._broken}")
        ceiling = record["rv"] + self.block if record["rv"] > self._ceiling else None
        try:
            with self._lock:
                if ceiling is not None:
                    self._write({"op": "reserve", "rv": ceiling})
                self._write(record)
            if ceiling is not None:
                self.sync()
                self._ceiling = ceiling
        except OSError as exc:
            self._broken = exc
            raise

    def sync(self) -> None:
        """Return once every record appended before the call is on disk; one fsync covers all waiters."""
        with self._sync_lock:
            with self._lock:
                target, fd = self._written, self._fd
            if self._synced >= target:
                return
            os.fdatasync(fd)
            self.fsyncs += 1
            self._synced = target

    def rotate(self) -> int:
        """Start a new segment (checkpoint's first step); returns its sequence. The old one is synced first,
        so nothing it holds depends on the snapshot that follows."""
        with self._sync_lock, self._lock:
            os.fdatasync(self._fd)
            os.close(self._fd)
            self.fsyncs += 1
            self._open_next()
            return self.seq

    def drop_before(self, seq: int) -> None:
        """Delete segments older than ``seq``: call only once a snapshot covering them is durable."""
        for old, path in segments(self.directory, self.name):
            if old < seq:
                path.unlink(missing_ok=True)
        fsync_dir(self.directory)

    def close(self, *, remove: bool = False) -> None:
        """Close the log; ``remove`` deletes every segment (after a final snapshot on clean shutdown)."""
        with self._sync_lock, self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1
        if remove:
            self.drop_before(self.seq + 1)


Journal = Callable[[Obj], None]
