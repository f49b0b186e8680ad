"""deploys/pin_gpu.py (runbook step 4, pin the GPU type) through the real pyinfra CLI on the rehearsal cluster."""

from __future__ import annotations

from typing import Any

from fixtures import pyinfra_run
from fixtures.budget_world import (
    GOOD_ARGS,
    L40S_KV,
    LOCAL,
    PIN,
    assert_no_changes,
    deployment,
    kv_logged,
    live_pods,
    quiet,
    rolled_out,
    scenario,
)
from fixtures.dry_run import dry_then_apply
from fixtures.pyinfra_run import Rehearsal
from fixtures.restore_world import L4_TOLERATION, host_out, vllm_runtime

rehearsal = pyinfra_run.rehearsal
exact_rehearsal = pyinfra_run.exact_rehearsal  # vLLM's log compared with the prediction exactly


def on_l4(dep: dict[str, Any]) -> None:
    """The incident's scheduling half: nodeSelector moved to the GKE L4 pool (flags kept)."""
    spec = dep["spec"]["template"]["spec"]
    spec["nodeSelector"] = {"cloud.google.com/gke-accelerator": "nvidia-l4"}
    spec["tolerations"] = [dict(L4_TOLERATION)]


def test_pins_the_policy_product_and_pods_start_on_it(exact_rehearsal: Rehearsal) -> None:
    rehearsal = exact_rehearsal
    scenario(rehearsal, on_l4, "move to the L4 pool")
    assert {p["spec"]["nodeName"] for p in live_pods(rehearsal)} == {"gke-l4-pool-1", "gke-l4-pool-2"}
    dry, got = dry_then_apply(rehearsal, LOCAL, PIN, expect_diffs=1)
    shown = host_out(dry.stderr)
    assert shown.count(L40S_KV) == 1, shown
    for change in ("-    cloud.google.com/gke-accelerator: nvidia-l4", "+    nvidia.com/gpu.product: NVIDIA-L40S",
                   "pin nvidia.com/gpu.product=NVIDIA-L40S, 1 x nvidia.com/gpu per pod: 3 node(s), 3 free GPU(s), "
                   "room for 3 pod(s) during the rollout"):
        assert change in shown, (change, shown)
    assert not [line for line in shown if "strategy" in line]
    assert got.returncode == 0, got.stderr
    summary = "pin deployment llm/llama-8b to nvidia.com/gpu.product=NVIDIA-L40S with 1 GPU(s) per pod"
    assert any(line.startswith(summary + ": written") for line in host_out(got.stderr)), got.stderr
    after = rolled_out(rehearsal)
    spec = after["spec"]["template"]["spec"]
    assert spec["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-L40S"}
    assert spec["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert spec["containers"][0]["args"] == GOOD_ARGS
    assert after["spec"]["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1,
                                                                                    "maxUnavailable": 0}}
    notes = after["metadata"]["annotations"]
    assert notes["kubernetes.io/change-cause"] == ("vllm-remedy pin-gpu: pin nvidia.com/gpu.product=NVIDIA-L40S, "
                                                   "1 GPU(s) per pod")
    assert all(p["spec"]["nodeName"].startswith("gpu-l40s-") for p in live_pods(rehearsal))
    assert set(kv_logged(rehearsal).values()) == {197840}

    assert_no_changes(rehearsal, PIN, 4)


def test_full_gpu_nodes_switch_the_rollout_to_max_surge_zero(exact_rehearsal: Rehearsal) -> None:
    rehearsal = exact_rehearsal
    vllm_runtime(rehearsal)

    def three_on_karpenter_label(dep: dict[str, Any]) -> None:
        dep["spec"]["replicas"] = 3
        dep["spec"]["strategy"] = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}
        dep["spec"]["template"]["spec"]["nodeSelector"] = {"karpenter.k8s.aws/instance-gpu-name": "l40s"}

    rehearsal.change(three_on_karpenter_label, change_cause="3 replicas, Karpenter's label")
    rolled_out(rehearsal)
    rehearsal.change(lambda d: d["spec"].update(strategy={"type": "RollingUpdate",
                                                          "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}))
    quiet(rehearsal)
    assert len(live_pods(rehearsal)) == 3  # every L40S GPU is taken by our own pods

    got, applied = dry_then_apply(rehearsal, LOCAL, PIN, expect_diffs=2)  # the template's and the strategy's
    shown = host_out(got.stderr)
    for change in ("--- deployment llm/llama-8b strategy (current)", "-    maxSurge: 1", "+    maxSurge: 0",
                   "-    maxUnavailable: 0", "+    maxUnavailable: 1",
                   "strategy: RollingUpdate maxSurge 1, maxUnavailable 0 -> RollingUpdate maxSurge 0, "
                   "maxUnavailable 1: no free NVIDIA-L40S GPU for a surge pod, so pods are replaced one at a time",
                   "-    karpenter.k8s.aws/instance-gpu-name: l40s", "+    nvidia.com/gpu.product: NVIDIA-L40S"):
        assert change in shown, (change, shown)
    assert applied.returncode == 0, applied.stderr
    after = rolled_out(rehearsal)
    assert after["spec"]["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0,
                                                                                    "maxUnavailable": 1}}
    assert after["spec"]["template"]["spec"]["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-L40S"}
    assert after["metadata"]["annotations"]["vllm-remedy.io/last-action-reason"] == (
        "pin nvidia.com/gpu.product=NVIDIA-L40S, 1 GPU(s) per pod; maxSurge 0 / maxUnavailable 1: no free GPU for "
        "a surge pod")
    assert len(live_pods(rehearsal)) == 3
    assert set(kv_logged(rehearsal).values()) == {197840}


def test_refuses_a_product_without_schedulable_capacity(rehearsal: Rehearsal) -> None:
    vllm_runtime(rehearsal)
    before = quiet(rehearsal)
    tainted = rehearsal.pyinfra(LOCAL, PIN, "-y", "--data", "gpu_product=NVIDIA-L4")
    assert tainted.returncode == 1, tainted.stderr
    assert ("refused: pin deployment llm/llama-8b to NVIDIA-L4: no schedulable NVIDIA-L4 capacity: 2 node(s) labelled "
            "nvidia.com/gpu.product=NVIDIA-L4, 0 free GPU(s), none can take a pod of 1 GPU(s)"
            in host_out(tainted.stderr)), tainted.stderr
    absent = rehearsal.pyinfra(LOCAL, PIN, "-y", "--data", "gpu_product=NVIDIA-H100-80GB-HBM3")
    assert absent.returncode == 1, absent.stderr
    assert ("refused: pin deployment llm/llama-8b to NVIDIA-H100-80GB-HBM3: no node offers NVIDIA-H100-80GB-HBM3 under "
            "nvidia.com/gpu.product (allow_shared=False); nothing to pin to" in host_out(absent.stderr))
    assert deployment(rehearsal)["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
