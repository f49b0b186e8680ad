"""A rehearsal pod serving an AWQ checkpoint at a TP that splits a quantization group across two GPUs dies as vLLM
does, on vLLM's own exception (awq.py / auto_awq.py ``create_weights``), and ``diagnose`` reads its log back as
``config_refused`` naming tensor-parallel-size; the same checkpoint at TP 1 starts. The config is
tests/data/configs/Qwen2.5-72B-Instruct-AWQ-unpadded.json (SOURCES.md), shipped by the world as a Hub would serve it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from vllm_remedy.sim.clock import Clock
from vllm_remedy.sim.cluster import Cluster
from vllm_remedy.sim.seed import make_node
from vllm_remedy.sim.vllm_pod import install
from vllm_remedy.sim.vllm_pod.reality import EXACT
from vllm_remedy.vllm.outcomes import Failure
from vllm_remedy.vllm.startup_log import parse_startup_log

SHIPPED = "acme-corp/Qwen2.5-72B-Instruct-AWQ-unpadded"
CONFIG = json.loads((Path(__file__).resolve().parents[2] / "data" / "configs" /
                     "Qwen2.5-72B-Instruct-AWQ-unpadded.json").read_text())
VLLM_SAYS = ("ValueError: The input size is not aligned with the quantized weight shape. This can be caused by too "
             "large tensor parallel size.")


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    c = Cluster("t", clock=Clock(speed=600), reality=EXACT)
    install(c)
    c.store.create("nodes", make_node({"name": "h100-1", "gpu": {"product": "NVIDIA-H100-80GB-HBM3", "count": 2}},
                                      "t"))
    c.apply_seed({"models": [{"id": SHIPPED, "config": CONFIG}]})
    c.start()
    yield c
    c.stop()


def pod(name: str, tp: int) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "llm"},
            "spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
                     "containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.11.0", "command": ["vllm", "serve"],
                                     "args": [SHIPPED, "--max-model-len", "8192", "--tensor-parallel-size", str(tp)],
                                     "resources": {"limits": {"nvidia.com/gpu": str(tp)}}}]}}


def _state(c: Cluster, name: str) -> str:
    statuses = (c.store.get("pods", "llm", name).get("status") or {}).get("containerStatuses") or []
    return str(next((s.get("state") for s in statuses if s["name"] == "vllm"), {}))


def test_tp2_dies_on_vllms_words_and_diagnoses_as_config_refused(cluster, cli, tmp_path):
    cluster.store.create("pods", pod("split", 2))
    assert cluster.wait_for(lambda: "CrashLoopBackOff" in _state(cluster, "split"), 8)
    text = cluster.read_log("llm", "split", previous=True)
    assert text.rstrip().endswith(VLLM_SAYS), text[-600:]
    report = parse_startup_log(text)
    assert (report.failure, report.failure_detail["setting"]) == (Failure.CONFIG_REFUSED, "tensor-parallel-size")
    log = tmp_path / "split.log"
    log.write_text(text)
    got = cli("diagnose", "--log", str(log), "-o", "json")
    assert json.loads(got.stdout)["failure"] == "config_refused", got.stdout


def test_tp1_starts(cluster):
    cluster.store.create("pods", pod("whole", 1))
    assert cluster.wait_for(lambda: "running" in _state(cluster, "whole"), 8)
    assert "not aligned" not in cluster.read_log("llm", "whole")
