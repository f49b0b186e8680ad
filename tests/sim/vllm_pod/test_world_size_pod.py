"""A rehearsal pod whose engine spans more GPUs than its container gets dies as vLLM does, and its log says what its
arguments say: TP 2 on one GPU prints ``tensor_parallel_size=2`` (in "non-default args" and the engine's config line)
before its release's refusal (0.11.0: Ray's placement group, after its wait); two data-parallel engines on one GPU leave
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


def _restarts(c: Cluster, name: str) -> int:
    statuses = (c.store.get("pods", "llm", name).get("status") or {}).get("containerStatuses") or []
    return int(next((s.get("restartCount") or 0 for s in statuses if s["name"] == "vllm"), 0))


def test_tp2_on_one_gpu_logs_its_own_tensor_parallel_size(cluster):
    """0.11.0 has no config check: Ray waits for the second GPU (cluster time: 2550 s, 4.3 s at speed 600), then
    fails; a run that long restarts without CrashLoopBackOff's growing delay."""
    cluster.store.create("pods", pod("tp2", ["--tensor-parallel-size", "2"]))
    assert cluster.wait_for(lambda: _restarts(cluster, "tp2") >= 1, 8), _state(cluster, "tp2")
    text = cluster.read_log("llm", "tp2", previous=True)
    ip = cluster.store.get("pods", "llm", "tp2")["status"]["podIP"]
    assert text.rstrip().endswith(
        f"ValueError: Cannot provide a placement group of placement_group_specs=[{{'GPU': 1.0, 'node:{ip}': 0.001}}, "
        "{'GPU': 1.0}] within 1800 seconds. See `ray status` and `ray list nodes` to make sure the cluster has "
        "enough resources."), text[-600:]
    assert "Waiting for creating a placement group of specs for 2550 seconds" in text, text[-1500:]
    assert "tensor_parallel_size=1" not in text and "tensor_parallel_size=2" in text, text


def test_tp2_on_one_gpu_from_0_13_is_parallel_configs_refusal():
    """From 0.12.0 ParallelConfig (a pydantic dataclass) refuses it at config time, inside pydantic's ValidationError;
    0.12.x in its own words."""
    from vllm_remedy.sim.vllm_pod.launch import plan
    from vllm_remedy.vllm.cmdline import find_server

    node = {"metadata": {"labels": {"nvidia.com/gpu.product": "NVIDIA-L40S"}}}
    for tag, words in (("v0.13.0", "Value error, World size (2) is larger than the number of available GPUs (1) in "
                                   "this node. If this is intentional and you are using:\n  - ray, set "
                                   "'--distributed-executor-backend ray'.\n  - multiprocessing, set '--nnodes' "
                                   "appropriately. [type=value_error"),
                       ("v0.12.0", "Value error, Tensor parallel size (2) cannot be larger than the number of "
                                   "available GPUs (1). [type=value_error")):
        spec = pod("p", ["--tensor-parallel-size", "2"])["spec"]
        spec["containers"][0]["image"] = f"vllm/vllm-openai:{tag}"
        got = plan(find_server(spec), spec["containers"][0], node)
        assert got.stage == "config", got
        assert got.error.startswith("pydantic_core._pydantic_core.ValidationError: 1 validation error for "
                                    "ParallelConfig\n"), got.error
        assert words in got.error, got.error


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
