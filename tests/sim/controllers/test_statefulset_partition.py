"""A RollingUpdate partition on the rehearsal cluster as the upstream controller keeps it (newVersionedStatefulSetPod):
an ordinal below ``spec.ordinals.start`` + partition is made from the set's current revision, so a pod deleted there
comes back on the revision it ran, not on the update revision; ordinals count from ``spec.ordinals.start``. Before,
the rehearsal cluster ignored ``ordinals.start`` (pods from 0) and so counted the partition from 0 — the partition a
tool reads (``kube.sts_wait.held_by_partition``) held other pods there than on a real cluster."""

from __future__ import annotations

import json

import pytest

from fixtures import sim_world
from fixtures.sim_world import Sim
from fixtures.sts_world import STS, image, ok, pods, settled, web

live_sim = sim_world.live_sim
V = "32"


@pytest.fixture(autouse=True)
def _need_kubectl() -> None:
    sim_world.require_kubectl(V)


@pytest.mark.parametrize("start", [0, 3])
def test_a_pod_deleted_below_the_partition_comes_back_at_the_current_revision(live_sim: Sim, start: int) -> None:
    sts = web(3, {"type": "RollingUpdate", "rollingUpdate": {"partition": 1}})
    sts["spec"]["ordinals"] = {"start": start}
    ok(live_sim.kubectl(V, "-n", "llm", "apply", "-f", "-", stdin=json.dumps(sts)))
    old = settled(live_sim)["updateRevision"]
    first, second, third = (f"web-{start + i}" for i in range(3))
    assert set(pods(live_sim)) == {first, second, third}
    image(live_sim, "1.28")
    cluster = live_sim.clusters["a"]

    def status() -> dict:
        return cluster.store.get(STS, "llm", "web").get("status") or {}

    assert cluster.wait_for(lambda: status().get("updatedReplicas") == 2 and status().get("readyReplicas") == 3, 8)
    new = status()["updateRevision"]
    assert pods(live_sim) == {first: old, second: new, third: new}  # the partition counts from ordinals.start
    uid = cluster.store.get("pods", "llm", first)["metadata"]["uid"]
    ok(live_sim.kubectl(V, "-n", "llm", "delete", "pod", first, "--wait=false"))
    assert cluster.wait_for(lambda: status().get("readyReplicas") == 3 and first in pods(live_sim)
                            and cluster.store.get("pods", "llm", first)["metadata"]["uid"] != uid, 8)
    assert pods(live_sim) == {first: old, second: new, third: new}, pods(live_sim)  # back on the current revision
    assert status()["currentRevision"] == old
