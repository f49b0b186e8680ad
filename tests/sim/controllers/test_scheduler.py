"""Scheduler: GPU-aware filtering with kube-scheduler's messages, and the RollingUpdate GPU deadlock."""

from __future__ import annotations

import copy

import pytest

from vllm_remedy.sim.clock import Clock
from vllm_remedy.sim.cluster import Cluster
from vllm_remedy.sim.controllers import rollout as ro
from vllm_remedy.sim.controllers.scheduler import failure_message, node_reasons, tolerates, unschedulable_message
from vllm_remedy.sim.controllers.util import condition, pod_ready
from vllm_remedy.sim.seed import make_node

L40S = make_node({"name": "l40s-1", "gpu": {"product": "NVIDIA-L40S", "memoryMiB": 46068, "count": 1}}, "t")
L4 = make_node({"name": "l4-1", "gpu": {"product": "NVIDIA-L4", "memoryMiB": 23034, "count": 1},
                "labels": {"cloud.google.com/gke-accelerator": "nvidia-l4"},
                "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]}, "t")


def gpu_pod(gpus: int = 1, **spec: object) -> dict:
    return {"metadata": {"name": "p", "namespace": "llm"},
            "spec": {"containers": [{"name": "vllm", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}], **spec}}


def test_gpu_count_selector_affinity_and_taints_give_kube_scheduler_reasons():
    assert node_reasons(gpu_pod(), L40S, {}, 0) == []
    assert node_reasons(gpu_pod(), L40S, {"nvidia.com/gpu": 1.0}, 1) == ["Insufficient nvidia.com/gpu"]
    assert node_reasons(gpu_pod(2), L40S, {}, 0) == ["Insufficient nvidia.com/gpu"]
    pinned = gpu_pod(nodeSelector={"nvidia.com/gpu.product": "NVIDIA-L40S"})
    assert node_reasons(pinned, L40S, {}, 0) == []
    tolerant = gpu_pod(nodeSelector={"nvidia.com/gpu.product": "NVIDIA-L40S"},
                       tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}])
    assert node_reasons(tolerant, L4, {}, 0) == ["node(s) didn't match Pod's node affinity/selector"]
    # The taint filter runs before node affinity, as in kube-scheduler.
    assert node_reasons(pinned, L4, {}, 0) == ["node(s) had untolerated taint {nvidia.com/gpu: present}"]
    big_cpu = {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "31500m"}}}]}}
    assert node_reasons(big_cpu, L40S, {}, 0) == []
    assert node_reasons(big_cpu, L40S, {"cpu": 1.0}, 0) == ["Insufficient cpu"]  # 32 allocatable
    full = make_node({"name": "tiny", "pods": 1}, "t")
    assert node_reasons({"spec": {"containers": [{"name": "c"}]}}, full, {}, 1) == ["Too many pods"]
    cordoned = copy.deepcopy(L40S)
    cordoned["spec"]["unschedulable"] = True
    assert node_reasons(gpu_pod(), cordoned, {}, 0) == ["node(s) were unschedulable"]


@pytest.mark.parametrize(("operator", "values", "fits_l40s", "fits_l4"), [
    ("In", ["NVIDIA-L40S", "NVIDIA-H100-80GB-HBM3"], True, False),
    ("NotIn", ["NVIDIA-L4", "NVIDIA-A10G"], True, False),
    ("Exists", None, True, True),
    ("DoesNotExist", None, False, False),
])
def test_required_node_affinity_operators(operator, values, fits_l40s, fits_l4):
    expr = {"key": "nvidia.com/gpu.product", "operator": operator, **({"values": values} if values else {})}
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [expr]}]}}}
    pod = gpu_pod(affinity=affinity, tolerations=[{"operator": "Exists"}])
    assert (node_reasons(pod, L40S, {}, 0) == []) is fits_l40s
    assert (node_reasons(pod, L4, {}, 0) == []) is fits_l4


def test_terms_are_ored_and_gt_compares_gpu_memory():
    terms = [{"matchExpressions": [{"key": "nvidia.com/gpu.memory", "operator": "Gt", "values": ["40000"]}]},
             {"matchExpressions": [{"key": "cloud.google.com/gke-accelerator", "operator": "In",
                                    "values": ["nvidia-h100-80gb"]}]}]
    pod = gpu_pod(affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": terms}}}, tolerations=[{"operator": "Exists"}])
    assert node_reasons(pod, L40S, {}, 0) == []
    assert node_reasons(pod, L4, {}, 0) == ["node(s) didn't match Pod's node affinity/selector"]


def test_tolerations_match_key_value_and_effect():
    taint = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
    assert tolerates([{"key": "nvidia.com/gpu", "value": "present"}], taint)
    assert tolerates([{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}], taint)
    assert not tolerates([{"key": "nvidia.com/gpu", "value": "absent"}], taint)
    assert not tolerates([{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}], taint)
    assert not tolerates([], taint)


def test_failure_message_is_the_sorted_histogram():
    assert failure_message(3, ["node(s) didn't match Pod's node affinity/selector", "Insufficient nvidia.com/gpu",
                               "node(s) didn't match Pod's node affinity/selector"]) == (
        "0/3 nodes are available: 1 Insufficient nvidia.com/gpu, "
        "2 node(s) didn't match Pod's node affinity/selector.")


def test_unschedulable_message_appends_kube_scheduler_132_preemption_verdict():
    taint, selector = "node(s) had untolerated taint {nvidia.com/gpu: present}", \
        "node(s) didn't match Pod's node affinity/selector"
    pod = gpu_pod()
    assert unschedulable_message(pod, [[selector]] * 3) == (
        "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. "
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.")
    assert unschedulable_message(pod, [[taint], [taint], [selector], ["Insufficient nvidia.com/gpu"]] +
                                 [["Insufficient cpu", "Insufficient nvidia.com/gpu"]] * 2) == (
        "0/6 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 2 Insufficient cpu, "
        "2 node(s) had untolerated taint {nvidia.com/gpu: present}, 3 Insufficient nvidia.com/gpu. "
        "preemption: 0/6 nodes are available: 3 No preemption victims found for incoming pod, "
        "3 Preemption is not helpful for scheduling.")
    assert unschedulable_message(pod, [["Too many pods"], ["node(s) were unschedulable"]]) == (
        "0/2 nodes are available: 1 Too many pods, 1 node(s) were unschedulable. preemption: 0/2 nodes are "
        "available: 1 No preemption victims found for incoming pod, 1 Preemption is not helpful for scheduling.")
    never = {**pod, "spec": {**pod["spec"], "preemptionPolicy": "Never"}}
    assert unschedulable_message(never, [["Insufficient nvidia.com/gpu"]]) == (
        "0/1 nodes are available: 1 Insufficient nvidia.com/gpu. preemption: not eligible due to "
        "preemptionPolicy=Never.")
    assert unschedulable_message(pod, []) == "no nodes available to schedule pods"


def test_rolling_update_on_full_gpu_nodes_deadlocks_with_failed_scheduling():
    c = Cluster("test", clock=Clock(speed=600))
    c.store.create("nodes", L40S)
    for name in ("l4-1", "l4-2"):
        c.store.create("nodes", make_node({"name": name, "gpu": {"product": "NVIDIA-L4", "count": 1}}, "t"))
    c.start()
    try:
        c.store.create("deployments.apps", {
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "llama-8b", "namespace": "llm"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "llama-8b"}}, "template": {
                "metadata": {"labels": {"app": "llama-8b"}},
                "spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"}, "containers": [{
                    "name": "vllm", "image": "vllm/vllm-openai:v0.8.4",
                    "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}}})
        assert c.wait_for(lambda: c.rolled_out("llm", "llama-8b"), 3)
        [old_pod] = c.store.list("pods", "llm")[0]
        assert old_pod["spec"]["nodeName"] == "l40s-1"

        def bump(obj: dict) -> None:
            obj["spec"]["template"]["spec"]["containers"][0]["image"] = "vllm/vllm-openai:v0.9.0"

        c.store.mutate("deployments.apps", "llm", "llama-8b", bump)
        message = ("0/3 nodes are available: 1 Insufficient nvidia.com/gpu, "
                   "2 node(s) didn't match Pod's node affinity/selector. preemption: 0/3 nodes are available: "
                   "1 No preemption victims found for incoming pod, 2 Preemption is not helpful for scheduling.")

        def stuck() -> list[dict]:
            return [p for p in c.store.list("pods", "llm")[0] if not p["spec"].get("nodeName")
                    and (condition(p.get("status") or {}, "PodScheduled") or {}).get("reason") == "Unschedulable"]

        assert c.wait_for(lambda: len(stuck()) == 1, 3)
        [pending] = stuck()
        scheduled = condition(pending["status"], "PodScheduled")
        assert (pending["status"]["phase"], scheduled["status"], scheduled["message"]) == ("Pending", "False", message)
        events = [e for e in c.store.list("events", "llm")[0] if e["reason"] == "FailedScheduling"]
        assert [(e["type"], e["message"], e["involvedObject"]["name"]) for e in events] == [
            ("Warning", message, pending["metadata"]["name"])]
        assert c.wait_for(lambda: (c.store.get("deployments.apps", "llm", "llama-8b")["status"]
                                   .get("observedGeneration")) == 2, 3)
        d = c.store.get("deployments.apps", "llm", "llama-8b")
        assert (d["status"]["replicas"], d["status"]["updatedReplicas"], d["status"]["availableReplicas"]) == (2, 1, 1)
        assert ro.rollout_status_message(d) == (
            False, 'Waiting for deployment "llama-8b" rollout to finish: 1 old replicas are pending termination...')
        still = c.store.get("pods", "llm", old_pod["metadata"]["name"])
        assert pod_ready(still)
        # Freeing the GPU (what the runbook's "scale down / Recreate" does) lets the new pod schedule.
        c.store.delete("pods", "llm", old_pod["metadata"]["name"])
        assert c.wait_for(lambda: c.store.find("pods", "llm", pending["metadata"]["name"]) is not None and c.store.get(
            "pods", "llm", pending["metadata"]["name"])["spec"].get("nodeName") == "l40s-1", 3)
        scheduled_events = [e for e in c.store.list("events", "llm")[0] if e["reason"] == "Scheduled"
                            and e["involvedObject"]["name"] == pending["metadata"]["name"]]
        assert scheduled_events[0]["message"] == f"Successfully assigned llm/{pending['metadata']['name']} to l40s-1"
    finally:
        c.stop()
