"""Pod/node health, the GPU picture of a node, and the revision diff — pure functions over API-shaped dicts."""

from __future__ import annotations

from typing import Any

from fixtures.kube_objects import BAD_ARGS, GOOD_ARGS, crashloop_pod, pod_template
from vllm_remedy.kube.diff import describe, revision_diff, unified_template_diff
from vllm_remedy.kube.gpus import gpu_product, node_gpus, pod_gpu, pod_gpu_request
from vllm_remedy.kube.health import container_health, node_health, pod_health


def ready_pod(name: str, since: str = "2025-03-03T11:00:00Z", node: str = "gke-l40s-pool-1", gpus: str = "1",
              namespace: str = "llm", phase: str = "Running") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": "llama-8b"}},
        "spec": {"nodeName": node, "containers": [{"name": "vllm", "resources": {
            "limits": {"nvidia.com/gpu": gpus}, "requests": {"nvidia.com/gpu": gpus, "cpu": "4"}}}]},
        "status": {"phase": phase, "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": since}],
                   "containerStatuses": [{"name": "vllm", "ready": True, "restartCount": 0,
                                          "state": {"running": {"startedAt": since}}}]},
    }


def test_cuda_oom_crash_loop_is_error_exit_1_not_oomkilled() -> None:
    h = pod_health(crashloop_pod())
    assert (h.crash_looping, h.host_oom_killed, h.restarts, h.ready, h.ready_since) == (True, False, 5, False, None)
    c = h.container("vllm")
    assert (c.exit_code, c.terminated_reason, c.failed, c.terminated_now) == (1, "Error", True, False)


def test_host_oom_killed_is_told_apart() -> None:
    h = pod_health(crashloop_pod(reason="OOMKilled", exit_code=137))
    assert (h.crash_looping, h.host_oom_killed) == (True, True)


def test_ready_since_and_ready_for() -> None:
    h = pod_health(ready_pod("p"))
    assert h.ready_since == "2025-03-03T11:00:00Z"
    assert h.ready_for(1_741_000_000.0 + 1800) == 1800.0 + (1_741_000_000.0 - 1_740_999_600.0)
    assert pod_health(crashloop_pod()).ready_for(1_741_999_999.0) == 0.0


def test_unschedulable_message_is_kept() -> None:
    pod = {"metadata": {"name": "p", "namespace": "llm"}, "spec": {},
           "status": {"phase": "Pending", "conditions": [{
               "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
               "message": "0/3 nodes are available: 3 Insufficient nvidia.com/gpu. preemption: 0/3 nodes are "
                          "available: 3 No preemption victims found for incoming pod."}]}}
    assert pod_health(pod).unschedulable.startswith("0/3 nodes are available: 3 Insufficient nvidia.com/gpu.")


def test_node_health() -> None:
    node = {"metadata": {"name": "n1"}, "spec": {"unschedulable": True},
            "status": {"conditions": [{"type": "Ready", "status": "True"},
                                      {"type": "MemoryPressure", "status": "True"},
                                      {"type": "DiskPressure", "status": "False"}]}}
    h = node_health(node)
    assert (h.ready, h.cordoned, h.pressure) == (True, True, ("MemoryPressure",))


# ---- GPUs -----------------------------------------------------------------------------------

def gpu_node(name: str, labels: dict[str, str], allocatable: str = "4") -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels},
            "status": {"capacity": {"nvidia.com/gpu": allocatable}, "allocatable": {"nvidia.com/gpu": allocatable}}}


def test_gpu_product_label_variants() -> None:
    assert gpu_product({"nvidia.com/gpu.product": "NVIDIA-L40S"}).base == "NVIDIA-L40S"
    shared = gpu_product({"nvidia.com/gpu.product": "NVIDIA-A10G-SHARED"})
    assert (shared.base, shared.shared, shared.mig_profile) == ("NVIDIA-A10G", True, None)
    mig = gpu_product({"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb"})
    assert (mig.base, mig.mig_profile) == ("NVIDIA-A100-SXM4-40GB", "1g.5gb")
    gke = gpu_product({"cloud.google.com/gke-accelerator": "nvidia-l4"})
    assert (gke.label, gke.value) == ("cloud.google.com/gke-accelerator", "nvidia-l4")
    kar = gpu_product({"karpenter.k8s.aws/instance-gpu-name": "l40s"})
    assert (kar.label, kar.base) == ("karpenter.k8s.aws/instance-gpu-name", "l40s")
    assert gpu_product({}).value is None


def test_gpu_requests_follow_the_scheduler() -> None:
    spec = {"containers": [{"resources": {"limits": {"nvidia.com/gpu": "1"}}},
                           {"resources": {"limits": {"nvidia.com/gpu": 2}}}],
            "initContainers": [{"resources": {"limits": {"nvidia.com/gpu": "4"}}}]}
    assert pod_gpu_request(spec) == 4
    assert pod_gpu_request({"spec": {"containers": [{"name": "a"}]}}) == 0


def test_pod_gpu_and_what_else_is_on_the_node() -> None:
    node = gpu_node("gke-l40s-pool-1", {"nvidia.com/gpu.product": "NVIDIA-L40S", "nvidia.com/gpu.memory": "46068"})
    mine = ready_pod("llama-8b-7c9d8f6b4f-abcde")
    other = ready_pod("embedder-0", namespace="search", gpus="2")
    done = ready_pod("batch-job", namespace="jobs", gpus="1", phase="Succeeded")
    elsewhere = ready_pod("far", node="another-node")
    got = pod_gpu(mine, node, [mine, other, done, elsewhere])
    assert (got.node, got.gpus, got.others) == ("gke-l40s-pool-1", 1, (("search/embedder-0", 2),))
    pic = got.node_gpus
    assert (pic.product.base, pic.memory_mib, pic.allocatable, pic.requested, pic.free) == (
        "NVIDIA-L40S", 46068, 4, 3, 1)
    assert node_gpus(node, []).free == 4


# ---- revision diff ----------------------------------------------------------------------------

def test_revision_diff_names_the_runbook_culprits() -> None:
    good = pod_template([*GOOD_ARGS, "--revision", "0e9e39f2"], "NVIDIA-L40S")
    bad = pod_template([*BAD_ARGS, "--revision", "5206a32e"], "NVIDIA-L4", image="vllm/vllm-openai:v0.9.0",
                       env=[{"name": "HF_HOME", "value": "/cache"}, {"name": "VLLM_USE_V1", "value": "1"}])
    bad["spec"]["containers"][0]["resources"]["limits"]["memory"] = "32Gi"
    changes = revision_diff(good, bad)
    assert describe(changes) == [
        "image: vllm/vllm-openai:v0.8.5 → vllm/vllm-openai:v0.9.0",
        "image tag: v0.8.5 → v0.9.0",
        "model revision: 0e9e39f2 → 5206a32e",
        "--max-model-len: 16384 → (absent)",
        "nodeSelector nvidia.com/gpu.product: NVIDIA-L40S → NVIDIA-L4",
        "resources.limits memory: (absent) → 32Gi",
        "env VLLM_USE_V1: (absent) → 1",
    ]
    assert revision_diff(good, good) == []


def test_flag_spelling_is_not_a_change() -> None:
    a = pod_template(["--model", "m", "--max-model-len", "16384"], "NVIDIA-L40S")
    b = pod_template(["--model=m", "--max-model-len=16384"], "NVIDIA-L40S")
    assert revision_diff(a, b) == []


def test_unified_template_diff() -> None:
    good = pod_template(GOOD_ARGS, "NVIDIA-L40S")
    bad = pod_template(BAD_ARGS, "NVIDIA-L4")
    assert unified_template_diff(bad, good, "revision 15", "revision 14") == (
        "--- revision 15\n+++ revision 14\n"
        "@@ -7,6 +7,8 @@\n"
        "   - args:\n     - --model\n     - meta-llama/Llama-3.1-8B-Instruct\n"
        "+    - --max-model-len\n+    - '16384'\n"
        "     - --gpu-memory-utilization\n     - '0.90'\n     - --max-num-seqs\n"
        "@@ -30,7 +32,7 @@\n"
        "     terminationMessagePolicy: File\n   dnsPolicy: ClusterFirst\n   nodeSelector:\n"
        "-    nvidia.com/gpu.product: NVIDIA-L4\n+    nvidia.com/gpu.product: NVIDIA-L40S\n"
        "   restartPolicy: Always\n   schedulerName: default-scheduler\n   securityContext: {}\n")
    assert unified_template_diff(good, good) == ""


def test_crash_looping_holds_between_back_offs_while_the_model_reloads() -> None:
    """Between two crashes the container reads ``running`` for the whole model load; still crash-looping."""
    reloading = {"name": "vllm", "ready": False, "restartCount": 3, "state": {"running": {}},
                 "lastState": {"terminated": {"exitCode": 1, "reason": "Error"}}}
    assert container_health(reloading).crash_looping
    recovered = {**reloading, "ready": True}
    assert not container_health(recovered).crash_looping
    first_start = {"name": "vllm", "ready": False, "restartCount": 0, "state": {"running": {}}}
    assert not container_health(first_start).crash_looping
    dead_now = {"name": "vllm", "ready": False, "restartCount": 0,
                "state": {"terminated": {"exitCode": 1, "reason": "Error"}}}
    assert container_health(dead_now).crash_looping
