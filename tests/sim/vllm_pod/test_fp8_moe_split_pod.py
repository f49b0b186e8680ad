"""A rehearsal pod serving an fp8 block-quantized MoE at a TP that splits each expert into part blocks dies on vLLM's
words (fp8.py@0.10.2 ``Fp8MoEMethod.create_weights``); with ``--enable-expert-parallel`` the experts stay whole and it
starts. The config is the inline ``model_config`` of tests/data/calibration/l40s-v0.10.2-qwen3-30b-a3b-fp8-tp2-ep.yaml
(its ``source:``), shipped by the world as a Hub would serve it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from vllm_remedy.sim.clock import Clock
from vllm_remedy.sim.cluster import Cluster
from vllm_remedy.sim.seed import make_node
from vllm_remedy.sim.vllm_pod import install
from vllm_remedy.sim.vllm_pod.reality import EXACT
from vllm_remedy.vllm.outcomes import Failure
from vllm_remedy.vllm.startup_log import parse_startup_log

CASE = Path(__file__).resolve().parents[2] / "data" / "calibration" / "l40s-v0.10.2-qwen3-30b-a3b-fp8-tp2-ep.yaml"
SHIPPED = "Qwen/Qwen3-30B-A3B-Instruct-2507-FP8"
VLLM_SAYS = ("ValueError: The output_size of gate's and up's weight = 192 is not divisible by weight quantization "
             "block_n = 128.")


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    c = Cluster("t", clock=Clock(speed=600), reality=EXACT)
    install(c)
    c.store.create("nodes", make_node({"name": "h100-1", "gpu": {"product": "NVIDIA-H100-80GB-HBM3", "count": 4}},
                                      "t"))
    c.apply_seed({"models": [{"id": SHIPPED, "config": yaml.safe_load(CASE.read_text())["model_config"]}]})
    c.start()
    yield c
    c.stop()


def pod(name: str, *extra: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "llm"},
            "spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
                     "containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.10.2", "command": ["vllm", "serve"],
                                     "args": [SHIPPED, "--max-model-len", "8192", "--tensor-parallel-size", "4",
                                              *extra],
                                     "resources": {"limits": {"nvidia.com/gpu": "4"}}}]}}


def _state(c: Cluster, name: str) -> str:
    statuses = (c.store.get("pods", "llm", name).get("status") or {}).get("containerStatuses") or []
    return str(next((s.get("state") for s in statuses if s["name"] == "vllm"), {}))


def test_tp4_dies_on_vllms_words(cluster):
    cluster.store.create("pods", pod("split"))
    assert cluster.wait_for(lambda: "CrashLoopBackOff" in _state(cluster, "split"), 8)
    text = cluster.read_log("llm", "split", previous=True)
    assert text.rstrip().endswith(VLLM_SAYS), text[-600:]
    assert parse_startup_log(text).failure is Failure.CONFIG_REFUSED


def test_expert_parallelism_starts(cluster):
    cluster.store.create("pods", pod("ep", "--enable-expert-parallel"))
    assert cluster.wait_for(lambda: "running" in _state(cluster, "ep"), 8)
    assert "block_n" not in cluster.read_log("llm", "ep")
