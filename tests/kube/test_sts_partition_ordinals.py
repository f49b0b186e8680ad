"""A RollingUpdate partition counted from ``spec.ordinals.start``, as the controller counts it (upstream's
newVersionedStatefulSetPod: an ordinal below start + partition keeps its revision): which crash-looping pods it holds
(``sts_wait.held_by_partition``) and which pods a finished rollout needs (``sts_wait.rows_rolled_out``), pure. Before,
the tools counted the partition from 0: with start 3 the pod it holds was taken for one the rollback reaches, and the
rollout waited for it until its timeout."""

from __future__ import annotations

from typing import Any

from fixtures.sts_objects import pod, sset
from vllm_remedy.kube.sts_wait import held_by_partition, partition_floor, rows_rolled_out

PARTITION_1 = {"type": "RollingUpdate", "rollingUpdate": {"partition": 1}}


def _from(start: int) -> dict[str, Any]:
    sts = sset(PARTITION_1)
    sts["spec"]["ordinals"] = {"start": start}
    return sts


def test_the_partition_holds_the_pods_below_start_plus_partition() -> None:
    assert partition_floor(_from(0)) == 1 and partition_floor(_from(3)) == 4
    assert partition_floor(sset({"type": "OnDelete"})) == 0
    crashing = [pod(f"s-{i}", "old", ready=False, crashing=True) for i in (3, 4, 5)]
    assert held_by_partition(_from(3), crashing) == ["s-3"]
    assert held_by_partition(_from(0), [pod(f"s-{i}", "old", ready=False, crashing=True) for i in (0, 1)]) == ["s-0"]


def test_a_partitioned_rollout_is_done_once_every_pod_from_start_plus_partition_serves_it() -> None:
    sts = _from(3)
    sts["status"].update({"replicas": 3, "readyReplicas": 3, "updatedReplicas": 2, "currentRevision": "old"})
    rows = [{"name": "s-3", "new": False, "ready": True}, {"name": "s-4", "new": True, "ready": True},
            {"name": "s-5", "new": True, "ready": True}]
    assert rows_rolled_out(sts, rows)  # s-3 is below the partition: it keeps its revision
    rows[1]["new"] = False
    assert not rows_rolled_out(sts, rows)
