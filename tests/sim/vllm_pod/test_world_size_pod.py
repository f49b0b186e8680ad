"""A rehearsal pod whose engine spans more GPUs than its container gets dies as vLLM does, and its log says what its
arguments say: TP 2 on one GPU prints ``tensor_parallel_size=2`` (in "non-default args" and the engine's config line)
before "World size (2) is larger than the number of available GPUs (1)"; two data-parallel engines on one GPU leave
the second with none ("No CUDA GPUs are available", vLLM's ``get_device_indices`` hands rank 1 device 1)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from vllm_remedy.sim.clock import Clock
from vllm_remedy.sim.cluster import Cluster
from vllm_remedy.sim.seed import make_node
from vllm_remedy.sim.vllm_pod import install
from vllm_remedy.sim.vllm_pod.reality import EXACT

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    c = Cluster("t", clock=Clock(speed=600), reality=EXACT)
    install(c)
    c.store.create("nodes", make_node({"name": "l40s-1", "gpu": {"product": "NVIDIA-L40S", "count": 4}}, "t"))
    c.start()
    yield c
    c.stop()


def pod(name: str, extra: list[str], gpus: int = 1) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "llm"},
            "spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"},
                     "containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.11.0", "command": ["vllm", "serve"],
                                     "args": [LLAMA, "--max-model-len", "8192", *extra],
                                     "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]}}


def _state(c: Cluster, name: str) -> str:
    statuses = (c.store.get("pods", "llm", name).get("status") or {}).get("containerStatuses") or []
    return str(next((s.get("state") for s in statuses if s["name"] == "vllm"), {}))


def test_tp2_on_one_gpu_logs_its_own_tensor_parallel_size(cluster):
    cluster.store.create("pods", pod("tp2", ["--tensor-parallel-size", "2"]))
    assert cluster.wait_for(lambda: "CrashLoopBackOff" in _state(cluster, "tp2"), 8)
    text = cluster.read_log("llm", "tp2", previous=True)
    assert "World size (2) is larger than the number of available GPUs (1)" in text, text[-600:]
    assert "tensor_parallel_size=1" not in text and "tensor_parallel_size=2" in text, text


@pytest.mark.parametrize(("extra", "gpus"), [(["--data-parallel-size", "2"], 1),
                                             (["-tp", "2", "-dp", "2"], 2)])
def test_data_parallel_engines_past_the_pods_gpus_find_none(cluster, extra, gpus):
    cluster.store.create("pods", pod("dp", extra, gpus))
    assert cluster.wait_for(lambda: "CrashLoopBackOff" in _state(cluster, "dp"), 8)
    text = cluster.read_log("llm", "dp", previous=True)
    assert text.rstrip().endswith("RuntimeError: No CUDA GPUs are available"), text[-600:]


def test_data_parallel_engines_within_the_pods_gpus_start(cluster):
    cluster.store.create("pods", pod("dp", ["--data-parallel-size", "2"], 2))
    assert cluster.wait_for(lambda: "running" in _state(cluster, "dp"), 8)
