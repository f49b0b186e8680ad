"""Graceful pod deletion on the rehearsal cluster: Terminating, the GPU held until the pod is gone, force.

Real clusters behave so (pod strategy's graceful delete, kubelet's final delete); a rollback onto full GPU
nodes waits for exactly this, so the rehearsal cluster must not free a GPU the moment a DELETE arrives.
"""

from __future__ import annotations

import time

import pytest

from fixtures import sim_world
from fixtures.sim_world import TABLE, Sim, call, require_kubectl
from vllm_remedy.sim.clock import parse_timestamp
from vllm_remedy.sim.controllers.termination import STOP_AFTER

PODS = "/api/v1/namespaces/llm/pods"
live_sim = sim_world.live_sim  # controllers at 60x, one node gpu-1 with four L40S


def gpu_pod(name: str, gpus: int, *, stop_after: float | None = None, grace: int | None = None) -> dict:
    """A plain (non-vLLM) container asking for ``gpus`` GPUs: it starts at once and serves nothing."""
    spec: dict = {"containers": [{"name": "work", "image": "busybox:1.36", "command": ["sleep", "infinity"],
                                  "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]}
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    meta: dict = {"name": name, "namespace": "llm"}
    if stop_after is not None:
        meta["annotations"] = {STOP_AFTER: str(stop_after)}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def wait(predicate, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return False


def running(live_sim: Sim, name: str) -> bool:
    pod = live_sim.clusters["a"].store.find("pods", "llm", name) or {}
    return (pod.get("status") or {}).get("phase") == "Running"


def test_a_deleted_pod_terminates_holding_its_gpus_then_goes(live_sim: Sim) -> None:
    store, clock = live_sim.clusters["a"].store, live_sim.clusters["a"].clock
    store.create("pods", gpu_pod("holder", 4, stop_after=120, grace=600))  # the node's four GPUs
    assert wait(lambda: running(live_sim, "holder"))
    before = clock.now()
    status, _, body = call(live_sim.url(), "DELETE", f"{PODS}/holder")
    assert status == 200 and body["metadata"]["deletionGracePeriodSeconds"] == 600
    assert before + 599 <= parse_timestamp(body["metadata"]["deletionTimestamp"]) <= clock.now() + 600  # whole s
    again = call(live_sim.url(), "DELETE", f"{PODS}/holder")[2]  # a second DELETE does not move the deadline
    assert again["metadata"]["deletionTimestamp"] == body["metadata"]["deletionTimestamp"]
    cells = call(live_sim.url(), "GET", PODS, accept=TABLE)[2]["rows"][0]["cells"]
    assert cells[:3] == ["holder", "0/1", "Terminating"]

    store.create("pods", gpu_pod("next", 1))  # no GPU free while the holder terminates
    assert wait(lambda: any(e["reason"] == "FailedScheduling" and e["involvedObject"]["name"] == "next"
                            for e in store.list("events", "llm")[0]))
    assert not store.get("pods", "llm", "next")["spec"].get("nodeName")
    assert wait(lambda: store.find("pods", "llm", "holder") is None)
    assert clock.now() - before >= 120  # vLLM's stop time, not the moment of the DELETE
    assert wait(lambda: store.get("pods", "llm", "next")["spec"].get("nodeName") == "gpu-1")
    killing = [e for e in store.list("events", "llm")[0]
               if e["reason"] == "Killing" and e["involvedObject"]["name"] == "holder"]
    assert [e["message"] for e in killing] == ["Stopping container work"]


def test_the_grace_period_cuts_a_slow_stop_short(live_sim: Sim) -> None:
    store, clock = live_sim.clusters["a"].store, live_sim.clusters["a"].clock
    store.create("pods", gpu_pod("slow", 1, stop_after=3600))  # default grace: 30 s
    assert wait(lambda: running(live_sim, "slow"))
    before = clock.now()
    assert call(live_sim.url(), "DELETE", f"{PODS}/slow")[2]["metadata"]["deletionGracePeriodSeconds"] == 30
    assert wait(lambda: store.find("pods", "llm", "slow") is None)
    assert 30 <= clock.now() - before < 600


@pytest.mark.parametrize("how", ["query", "body"])
def test_grace_period_zero_deletes_at_once(live_sim: Sim, how: str) -> None:
    store = live_sim.clusters["a"].store
    store.create("pods", gpu_pod("gone", 1, stop_after=600, grace=600))
    assert wait(lambda: running(live_sim, "gone"))
    if how == "query":
        status, _, _ = call(live_sim.url(), "DELETE", f"{PODS}/gone?gracePeriodSeconds=0")
    else:
        status, _, _ = call(live_sim.url(), "DELETE", f"{PODS}/gone",
                            {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0})
    assert status == 200 and store.find("pods", "llm", "gone") is None


def test_a_pending_pod_is_deleted_at_once_and_a_bad_grace_is_400(live_sim: Sim) -> None:
    store = live_sim.clusters["a"].store
    store.create("pods", gpu_pod("never", 9))  # more GPUs than any node has: stays Pending
    assert call(live_sim.url(), "DELETE", f"{PODS}/never")[0] == 200
    assert store.find("pods", "llm", "never") is None
    store.create("pods", gpu_pod("p", 1))
    status, _, body = call(live_sim.url(), "DELETE", f"{PODS}/p?gracePeriodSeconds=soon")
    assert status == 400 and "gracePeriodSeconds must be an integer" in body["message"]


def test_kubectl_delete_waits_for_the_pod_to_be_gone(live_sim: Sim) -> None:
    require_kubectl("32")
    store = live_sim.clusters["a"].store
    store.create("pods", gpu_pod("holder", 1, stop_after=90, grace=600))
    assert wait(lambda: running(live_sim, "holder"))
    got = live_sim.kubectl("32", "-n", "llm", "delete", "pod", "holder")
    assert got.returncode == 0, got.stderr
    assert got.stdout.strip() == 'pod "holder" deleted'
    assert store.find("pods", "llm", "holder") is None  # kubectl returned only once it was gone
    gone = live_sim.kubectl("32", "-n", "llm", "get", "pod", "holder")
    assert gone.returncode == 1 and 'pods "holder" not found' in gone.stderr
