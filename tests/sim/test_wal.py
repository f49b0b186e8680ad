"""The write-ahead log's replay rules, on real files: what a restart may and may not recover."""

from __future__ import annotations

import pytest

from vllm_remedy.sim.clock import Clock
from vllm_remedy.sim.store import Store
from vllm_remedy.sim.wal import Wal, WalCorrupt, replay, segments


def configmap(name: str, value: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "llm"},
            "data": {"v": value}}


def journaled(tmp_path, block: int = 1000) -> tuple[Store, Wal]:
    store = Store(clock=Clock(speed=60))
    wal = Wal(tmp_path, "a", ceiling=int(store.resource_version), block=block)
    store.journal = wal.append
    return store, wal


def test_replay_rebuilds_puts_and_deletes_and_skips_what_the_snapshot_has(tmp_path):
    store, wal = journaled(tmp_path)
    store.create("configmaps", configmap("one", "1"))
    snap = store.snapshot()  # holds "one"; the log still does too
    store.mutate("configmaps", "llm", "one", lambda o: o["data"].update(v="2"))
    store.create("configmaps", configmap("two", "2"))
    store.delete("configmaps", "llm", "two")
    wal.sync()
    found = replay(tmp_path, "a", snap)
    assert [(e["object"]["metadata"]["name"], e["object"]["data"]["v"]) for e in snap["objects"]] == [("one", "2")]
    assert found.applied == 3  # the create of "one" was skipped: already in the snapshot
    assert snap["objects"][0]["object"] == store.get("configmaps", "llm", "one")


def test_resource_version_resumes_above_the_reservation(tmp_path):
    store, _ = journaled(tmp_path, block=10)
    made = store.create("configmaps", configmap("one", "1"))
    found = replay(tmp_path, "a", {"resourceVersion": 1, "objects": []})
    assert found.resource_version == int(made["metadata"]["resourceVersion"]) + 10


def test_damage_before_the_newest_segment_is_refused(tmp_path):
    store, wal = journaled(tmp_path)
    store.create("configmaps", configmap("one", "1"))
    wal.rotate()
    store.create("configmaps", configmap("two", "2"))
    wal.sync()
    oldest = segments(tmp_path, "a")[0][1]
    oldest.write_bytes(oldest.read_bytes()[:-3])
    with pytest.raises(WalCorrupt):
        replay(tmp_path, "a", {"resourceVersion": 1, "objects": []})


def test_a_failing_journal_leaves_the_store_unchanged(tmp_path):
    store, wal = journaled(tmp_path)
    wal.close()  # appends now fail with EBADF, as on a dead disk
    with pytest.raises(OSError):
        store.create("configmaps", configmap("one", "1"))
    assert store.find("configmaps", "llm", "one") is None
    assert store.resource_version == "1"
