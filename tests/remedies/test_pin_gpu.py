"""GPU pinning, pure: label variants, capacity, surge on full nodes."""

from __future__ import annotations

from typing import Any

from fixtures.pod_templates import ARGS, template
from vllm_remedy.policy import GpuPolicy
from vllm_remedy.remedies.pin_gpu import plan_pin

TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


def node(name: str, product: str, *, free: bool = True, taint: bool = False, cordoned: bool = False,
         label: str = "nvidia.com/gpu.product") -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {label: product}},
            "spec": {"unschedulable": cordoned, "taints": [TAINT] if taint else []},
            "status": {"capacity": {"nvidia.com/gpu": "1"}, "allocatable": {"nvidia.com/gpu": "1"},
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def holder(name: str, on: str, ours: bool) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "llm", "labels": {"app": "x" if ours else "other"}},
            "spec": {"nodeName": on, "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
            "status": {"phase": "Running"}}


ROLLING = {"replicas": 2, "selector": {"matchLabels": {"app": "x"}},
           "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}}


def test_pin_uses_the_value_nodes_carry_and_drops_other_product_keys() -> None:
    nodes = [node("a", "NVIDIA-L40S"), node("b", "NVIDIA-L40S"), node("c", "NVIDIA-L4")]
    plan = plan_pin(template(selector={"cloud.google.com/gke-accelerator": "nvidia-l4", "pool": "gpu"}), ROLLING,
                    nodes, [], "llm", GpuPolicy(), "nvidia-l40s", 1)
    assert plan.refusal is None and plan.strategy is None
    assert plan.template["spec"]["nodeSelector"] == {"pool": "gpu", "nvidia.com/gpu.product": "NVIDIA-L40S"}
    assert (plan.free, plan.capacity_pods, plan.nodes) == (2, 2, ("a", "b"))


def test_shared_and_mig_variants_count_only_when_allowed_or_named() -> None:
    nodes = [node("s", "NVIDIA-L40S-SHARED"), node("m", "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb")]
    refused = plan_pin(template(), ROLLING, nodes, [], "llm", GpuPolicy(), "NVIDIA-L40S", 1)
    assert refused.refusal is not None and refused.refusal.startswith("no node offers NVIDIA-L40S")
    assert refused.notes == ("s: time-sliced (NVIDIA-L40S-SHARED); not counted (gpu.allow_shared)",)
    shared = plan_pin(template(), ROLLING, nodes, [], "llm", GpuPolicy(allow_shared=True), "NVIDIA-L40S", 1)
    assert shared.template["spec"]["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-L40S-SHARED"}
    assert plan_pin(template(), ROLLING, nodes, [], "llm", GpuPolicy(), "NVIDIA-A100-SXM4-40GB", 1).refused
    mig = plan_pin(template(), ROLLING, nodes, [], "llm", GpuPolicy(), "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", 1)
    assert mig.template["spec"]["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb"}


def test_gke_label_key_per_policy() -> None:
    nodes = [node("g", "nvidia-l4", label="cloud.google.com/gke-accelerator", taint=True)]
    tpl = template()
    tpl["spec"]["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    plan = plan_pin(tpl, ROLLING, nodes, [], "llm", GpuPolicy(label="cloud.google.com/gke-accelerator"),
                    "NVIDIA-L4", 1)
    assert plan.template["spec"]["nodeSelector"] == {"cloud.google.com/gke-accelerator": "nvidia-l4"}
    untolerated = plan_pin(template(), ROLLING, nodes, [], "llm",
                           GpuPolicy(label="cloud.google.com/gke-accelerator"), "NVIDIA-L4", 1)
    assert untolerated.refusal == ("no schedulable nvidia-l4 capacity: 1 node(s) labelled "
                                   "cloud.google.com/gke-accelerator=nvidia-l4, 0 free GPU(s), none can take a pod "
                                   "of 1 GPU(s)")


def test_full_nodes_switch_to_max_surge_zero_and_foreign_pods_block_capacity() -> None:
    nodes = [node("a", "NVIDIA-L40S"), node("b", "NVIDIA-L40S")]
    ours = [holder("p1", "a", True), holder("p2", "b", True)]
    old = template(selector={"karpenter.k8s.aws/instance-gpu-name": "l40s"})
    plan = plan_pin(old, ROLLING, nodes, ours, "llm", GpuPolicy(), "NVIDIA-L40S", 1)
    assert plan.strategy == {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}
    assert (plan.capacity_pods, plan.surge_pods) == (2, 0)
    theirs = [holder("q1", "a", False), holder("q2", "b", False)]
    assert plan_pin(old, ROLLING, nodes, theirs, "llm", GpuPolicy(), "NVIDIA-L40S", 1).refused
    recreate = {**ROLLING, "strategy": {"type": "Recreate"}}
    assert plan_pin(old, recreate, nodes, ours, "llm", GpuPolicy(), "NVIDIA-L40S", 1).strategy is None


def test_gpus_below_tensor_parallel_size_is_refused() -> None:
    plan = plan_pin(template([*ARGS, "--tensor-parallel-size", "2"]), ROLLING, [node("a", "NVIDIA-L40S")], [],
                    "llm", GpuPolicy(), "NVIDIA-L40S", 1)
    assert plan.refusal == "gpus=1 is fewer than --tensor-parallel-size 2 needs"


