"""A rehearsal pod whose memory-profiling forward does not fit the card (other processes hold 5.9 GiB of an L4) dies as
vLLM 0.19.0 does: a raw CUDA OOM under determine_available_memory -> profile_run -> _dummy_run, before any profile or
KV-cache line, and crash-loops. Its ``logs --previous`` reads back as ``profile_oom`` through the diagnose CLI, as the
estimate predicts. Drives a real Cluster (controllers running, clock at 600x) with the vLLM runtime installed."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from vllm_remedy.sim.clock import Clock
from vllm_remedy.sim.cluster import Cluster
from vllm_remedy.sim.seed import make_node
from vllm_remedy.sim.vllm_pod import GPU_USED_GIB, install
from vllm_remedy.sim.vllm_pod.reality import EXACT
from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.memory import EngineSettings, estimate
from vllm_remedy.vllm.outcomes import Failure
from vllm_remedy.vllm.startup_log import classify, parse_startup_log

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
FLAGS = {"gpu-memory-utilization": "0.7", "max-model-len": "8192"}


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    c = Cluster("t", clock=Clock(speed=600), reality=EXACT)
    install(c)
    c.store.create("nodes", make_node({"name": "l4-1", "gpu": {"product": "NVIDIA-L4", "count": 1}}, "t"))
    c.start()
    yield c
    c.stop()


def _status(c: Cluster) -> dict:
    statuses = (c.store.get("pods", "llm", "crowded").get("status") or {}).get("containerStatuses") or []
    return next((s for s in statuses if s["name"] == "vllm"), {})


def test_a_pod_whose_profile_does_not_fit_crash_loops_and_diagnose_reads_profile_oom(cluster, cli, tmp_path):
    cluster.store.mutate("nodes", "", "l4-1", lambda n: n["metadata"]["annotations"].update({GPU_USED_GIB: "5.9"}))
    args = [LLAMA, *(x for k, v in FLAGS.items() for x in (f"--{k}", v))]
    cluster.store.create("pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "crowded", "namespace": "llm"},
        "spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L4"},
                 "containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.19.0", "command": ["vllm", "serve"],
                                 "args": args, "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}})
    assert cluster.wait_for(lambda: "CrashLoopBackOff" in str(_status(cluster).get("state")), 8), _status(cluster)
    est = estimate(catalog.model(LLAMA), catalog.gpu("NVIDIA-L4"),
                   EngineSettings.from_flags(FLAGS, "0.19.0", {"other-process-gib": "5.9"}))
    assert est.start == "profile_oom"
    text = cluster.read_log("llm", "crowded", previous=True)
    assert "in profile_run" in text and "in _dummy_run" in text and "CUDA out of memory" in text
    assert "Available KV cache memory" not in text and "Memory profiling" not in text
    report = parse_startup_log(text)
    assert classify(report) is Failure.PROFILE_OOM and report.failure_detail["phase"] == "profiling"
    log = tmp_path / "previous.log"
    log.write_text(text)
    data = json.loads(cli("diagnose", "--log", str(log), "-o", "json").stdout)
    assert data["failure"] == "profile_oom" and data["hint"].startswith("step 4: ")
