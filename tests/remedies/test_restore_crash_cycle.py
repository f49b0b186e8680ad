"""Restore's verdict at every instant of a kubelet crash-loop cycle, from API-shaped pods through the Pods fact.

Between back-offs a crash-looping container is not always ``waiting: CrashLoopBackOff``: the kubelet shows the
death as the current state for a sync, restarts it (``running`` for the whole model load, restartCount up,
lastState terminated), and the back-off comes only from the second death on. Restore decides by that evidence —
restartCount with lastState terminated, or a death that is the current state — so no instant of the cycle reads as
healthy. Only a container that has never died (its first ContainerCreating and first run) carries none.
"""

from __future__ import annotations

from typing import Any

import pytest

from fixtures.kube_objects import incident
from vllm_remedy.facts.history import history_data
from vllm_remedy.facts.pods import pods_data
from vllm_remedy.policy import Policy
from vllm_remedy.remedies.restore import NONE, ROLLBACK, decide_restore

NOW = 1_741_000_000.0  # 2025-03-03T11:06:40Z, minutes after revision 15 rolled out
POLICY = Policy.from_mapping({})
DIED = {"terminated": {"exitCode": 1, "reason": "Error", "containerID": "containerd://0f3c"}}
KILLED = {"terminated": {"exitCode": 137, "reason": "OOMKilled", "containerID": "containerd://0f3c"}}


def status(state: dict[str, Any], restarts: int, last: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"name": "vllm", "ready": False, "started": "running" in state, "restartCount": restarts,
            "state": state, "lastState": last or {}}


#: One container's statuses in the order the kubelet reports them, from creation to the third start.
CYCLE = {
    "first ContainerCreating": (status({"waiting": {"reason": "ContainerCreating"}}, 0), False),
    "first run (loading)": (status({"running": {"startedAt": "2025-03-03T11:01:00Z"}}, 0), False),
    "first death, before the restart": (status(DIED, 0), True),
    "restarted at once, loading again": (status({"running": {}}, 1, DIED), True),
    "second death, before the back-off": (status(DIED, 1, DIED), True),
    "CrashLoopBackOff": (status({"waiting": {"reason": "CrashLoopBackOff"}}, 2, DIED), True),
    "back-off over, container being created": (status({"waiting": {"reason": "ContainerCreating"}}, 2, DIED), True),
    "third start, loading": (status({"running": {}}, 2, DIED), True),
    "host OOM kill, loading again": (status({"running": {}}, 1, KILLED), True),
}


def pod(name: str, container: dict[str, Any], rs_hash: str = "5f6c7d8b9a", deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": f"llama-8b-{rs_hash}-{name}", "namespace": "llm",
        "labels": {"app": "llama-8b", "pod-template-hash": rs_hash},
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": f"llama-8b-{rs_hash}",
                             "uid": f"rs-{rs_hash}", "controller": True}]}
    if deleting:
        meta["deletionTimestamp"] = "2025-03-03T11:06:30Z"
    return {"metadata": meta, "spec": {"nodeName": "gke-l4-pool-1", "containers": [{"name": "vllm"}]},
            "status": {"phase": "Running", "containerStatuses": [container],
                       "conditions": [{"type": "Ready", "status": "False", "reason": "ContainersNotReady",
                                       "lastTransitionTime": "2025-03-03T11:00:05Z"}]}}


def decide(pods: list[dict[str, Any]]) -> Any:
    dep, replicasets = incident()
    return decide_restore(history_data(dep, replicasets), pods_data(dep, replicasets, pods, container="vllm"),
                          POLICY, container="vllm", now=NOW)


@pytest.mark.parametrize("phase", list(CYCLE))
def test_every_instant_after_the_first_death_reads_as_crash_looping(phase: str) -> None:
    container, died = CYCLE[phase]
    got = decide([pod("a", container), pod("b", container)])
    assert got.action == (ROLLBACK if died else NONE), (phase, got.reason)
    if died:
        assert (got.revision, sum(got.failures.values())) == (14, 2), got.reason
    else:
        assert got.reason == "revision 15: no pod is crash-looping"


def test_a_replacement_pod_without_restarts_does_not_hide_its_crash_looping_sibling() -> None:
    """A pod deleted mid-loop comes back from its ReplicaSet with restartCount 0; the other still shows the loop."""
    backoff, _ = CYCLE["CrashLoopBackOff"]
    fresh, _ = CYCLE["first ContainerCreating"]
    got = decide([pod("a", backoff), pod("b", fresh)])
    assert (got.action, got.revision, got.failures) == (ROLLBACK, 14, {"unknown": 1}), got.reason


def test_a_predecessors_terminating_pods_are_no_evidence_about_the_current_revision() -> None:
    """Recreate: the previous revision's crash-looping pods still show their restarts while Terminating, before
    the current revision has a pod. Nothing has died on the current revision yet — restore must not act on them."""
    backoff, _ = CYCLE["CrashLoopBackOff"]
    got = decide([pod("a", backoff, rs_hash="7c9d8f6b4f", deleting=True),
                  pod("b", backoff, rs_hash="7c9d8f6b4f", deleting=True)])
    assert (got.action, got.reason) == (NONE, "revision 15: no pod is crash-looping")
