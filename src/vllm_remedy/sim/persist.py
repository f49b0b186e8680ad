"""Where the rehearsal server keeps its clusters between runs: snapshots plus the write-ahead log.

Why a separate keeper: the HTTP server only has to call ``sync`` before it acknowledges a write;
when to snapshot, how the log is compacted and how state is read back live here, next to each other,
so the crash-safety argument can be checked in one file (see ``wal.py`` for the log itself).

Files in ``state_dir`` per cluster: ``<name>.json`` (last snapshot, replaced atomically) and
``<name>.<seq>.wal`` (changes since). A clean stop writes a final snapshot and removes the log.
"""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path
from typing import Any

from vllm_remedy.sim.protocols import ClusterLike
from vllm_remedy.sim.wal import Wal, replay, segments, write_atomic

log = logging.getLogger(__name__)
SAVE_EVERY = 1.0  # real seconds between snapshots while a cluster changes (compacts the log when durable)


class StateKeeper:
    """Persist ``clusters`` to ``state_dir``: with ``durable``, every change goes through a WAL that
    ``sync`` makes durable; without, a snapshot about once a second (the old behaviour, for benchmarks)."""

    def __init__(self, state_dir: Path, *, durable: bool = True) -> None:
        self.state_dir = state_dir
        self.durable = durable
        self.clusters: dict[str, ClusterLike] = {}
        self.wals: dict[str, Wal] = {}
        self._dirty: set[str] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def add(self, cluster: ClusterLike) -> None:
        """Track ``cluster``; its changes mark it for the next snapshot."""
        self.clusters[cluster.name] = cluster
        cluster.store.subscribe(lambda _event, name=cluster.name: self._mark_dirty(name))

    def _mark_dirty(self, name: str) -> None:
        with self._lock:
            self._dirty.add(name)

    def start(self) -> None:
        """Open each cluster's log and write a first snapshot before any request is served, so an
        acknowledged write always has a snapshot and log to land in; then snapshot periodically."""
        self.state_dir.mkdir(parents=True, exist_ok=True)
        for name, cluster in self.clusters.items():
            if not self.durable:
                continue
            if not (self.state_dir / f"{name}.json").exists():
                for _, stale in segments(self.state_dir, name):  # a log without its snapshot: not ours
                    stale.unlink()
            wal = Wal(self.state_dir, name, ceiling=int(cluster.store.resource_version))
            self.wals[name] = wal
            cluster.store.journal = wal.append
            self._snapshot(name)
            wal.drop_before(wal.seq)  # the previous run's log is in the snapshot now
        if not self.durable:
            with self._lock:
                self._dirty |= set(self.clusters)  # a freshly seeded cluster is saved at once
        self._thread = threading.Thread(target=self._loop, name="sim-state", daemon=True)
        self._thread.start()

    def sync(self, name: str) -> None:
        """Block until every change ``name``'s store has made so far is on disk (before a 2xx)."""
        wal = self.wals.get(name)
        if wal is not None:
            wal.sync()

    def _loop(self) -> None:
        while not self._stop.wait(SAVE_EVERY):
            with self._lock:
                names, self._dirty = self._dirty, set()
            for name in names:
                try:
                    self.save(name)
                except OSError:
                    log.exception("saving cluster %s failed; the log still holds its changes", name)

    def save(self, name: str) -> None:
        """Checkpoint: start a new log segment, snapshot, then drop the segments the snapshot covers.

        Rotating first means every record in the old segments was appended before the snapshot was
        taken (appends happen under the store lock the snapshot also takes), so it is in the snapshot.
        """
        wal = self.wals.get(name)
        seq = wal.rotate() if wal is not None else 0
        self._snapshot(name)
        if wal is not None:
            wal.drop_before(seq)

    def _snapshot(self, name: str) -> None:
        """Write ``<state_dir>/<name>.json`` atomically and durably."""
        cluster = self.clusters[name]
        snap = cluster.snapshot() if hasattr(cluster, "snapshot") else {"store": cluster.store.snapshot()}
        data = {"cluster": name, "speed": cluster.clock.speed, "clock": cluster.clock.now(), "snapshot": snap}
        write_atomic(self.state_dir / f"{name}.json", json.dumps(data).encode())

    def stop(self) -> None:
        """Final snapshot of every cluster; the log is then redundant and removed, so the next start
        resumes at exactly this resourceVersion (no reserved gap)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        for name, cluster in self.clusters.items():
            wal = self.wals.pop(name, None)
            if wal is not None:
                cluster.store.journal = None  # later in-process changes are no one's acknowledged writes
            self._snapshot(name)
            if wal is not None:
                wal.close(remove=True)


def load_state(path: Path) -> dict[str, Any]:
    """A saved cluster (``<name>.json``) with its write-ahead log replayed on top.

    ``recovered`` says what replay did: records applied and bytes of torn tail dropped.
    """
    data = json.loads(path.read_text())
    name = data.get("cluster") or path.stem
    store = data.setdefault("snapshot", {}).setdefault("store", {})
    found = replay(path.parent, name, store)
    data["recovered"] = {"applied": found.applied, "torn_bytes": found.torn_bytes}
    return data
