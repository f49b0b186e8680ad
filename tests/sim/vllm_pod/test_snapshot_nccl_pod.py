"""The rehearsal pod's TP 2 start on vLLM 0.10.2 follows the worker's init order (``sim/vllm_pod/device.py``): the
snapshot and free-memory check come before NCCL's init, and the profile's activation is free again when the graphs are
captured after the KV cache. Perturbed reality (the default): the capture verdict is the pod's own arithmetic.

Llama-3.1-8B at TP 2 on two L40Ss, 16k: at 0.97 the capture peak is 44.40 of 44.42 GiB (graphs 0.96 GiB, freed
activation 1.27, the sampler warm-up after capture), so the pods start; at 0.98 it is 44.85 and they die in capture.
The pod used to charge NCCL's 1.03 GiB and every graph on top of the budget: 45.45 GiB at 0.97, a capture OOM.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from vllm_remedy.sim.clock import Clock
from vllm_remedy.sim.cluster import Cluster
from vllm_remedy.sim.seed import make_node
from vllm_remedy.sim.vllm_pod import GPU_USED_GIB, install
from vllm_remedy.sim.vllm_pod.reality import Reality
from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.memory import EngineSettings, estimate
from vllm_remedy.vllm.outcomes import Failure
from vllm_remedy.vllm.startup_log import classify, parse_startup_log

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
L40S = catalog.gpu("NVIDIA-L40S")


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    c = Cluster("t", clock=Clock(speed=600), reality=Reality())  # perturbed: the KV moves, the peak is the pod's
    install(c)
    c.store.create("nodes", make_node({"name": "l40s-1", "gpu": {"product": "NVIDIA-L40S", "count": 4}}, "t"))
    c.start()
    yield c
    c.stop()


def pod(name: str, utilization: str) -> dict:
    args = [LLAMA, "--max-model-len", "16384", "--tensor-parallel-size", "2", "--gpu-memory-utilization", utilization]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "llm"},
            "spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"},
                     "containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.10.2", "command": ["vllm", "serve"],
                                     "args": args, "ports": [{"containerPort": 8000}],
                                     "readinessProbe": {"httpGet": {"path": "/health", "port": 8000}},
                                     "resources": {"limits": {"nvidia.com/gpu": "2"}}}]}}


def status(c: Cluster, name: str) -> dict:
    statuses = (c.store.get("pods", "llm", name).get("status") or {}).get("containerStatuses") or []
    return next((s for s in statuses if s["name"] == "vllm"), {})


def predicted(utilization: str, other: float = 0.0):
    flags = {"max-model-len": "16384", "tensor-parallel-size": "2", "gpu-memory-utilization": utilization}
    inputs = {"other-process-gib": str(other)} if other else None
    return estimate(catalog.model(LLAMA), L40S, EngineSettings.from_flags(flags, "0.10.2", inputs))


def test_tp2_0_10_start_just_under_the_capture_threshold_serves_and_just_over_dies_in_capture(cluster):
    under, over = predicted("0.97"), predicted("0.98")
    assert under.start == "fits" and under.total_gib - under.peak_gib < 0.05
    assert over.start == "cudagraph_capture_oom"
    cluster.store.create("pods", pod("u97", "0.97"))
    cluster.store.create("pods", pod("u98", "0.98"))
    assert cluster.wait_for(lambda: status(cluster, "u97").get("ready") is True, 8), status(cluster, "u97")
    assert cluster.wait_for(lambda: "CrashLoopBackOff" in str(status(cluster, "u98").get("state")), 8)
    report = parse_startup_log(cluster.read_log("llm", "u98", previous=True))
    assert classify(report) is Failure.CUDAGRAPH_CAPTURE_OOM and report.failure_detail["phase"] == "cuda_graph_capture"


def test_tp2_0_10_free_memory_line_is_the_snapshot_before_nccl(cluster):
    """1.5 GiB held by another process at 0.97: refused. vLLM's message (gpu_worker.py@0.10.2) quotes the snapshot
    taken before the distributed init: the card less the other process and the CUDA context only."""
    cluster.store.mutate("nodes", "", "l40s-1", lambda n: n["metadata"]["annotations"].update({GPU_USED_GIB: "1.5"}))
    assert predicted("0.97", other=1.5).start == "free_memory_below_utilization"
    cluster.store.create("pods", pod("busy", "0.97"))
    assert cluster.wait_for(lambda: "CrashLoopBackOff" in str(status(cluster, "busy").get("state")), 8)
    report = parse_startup_log(cluster.read_log("llm", "busy", previous=True))
    assert classify(report) is Failure.FREE_MEMORY_BELOW_UTILIZATION
    assert report.failure_detail["free_gib"] == round(44.42 - 1.5 - 0.37, 2)  # no NCCL yet: 42.55, not 41.52
