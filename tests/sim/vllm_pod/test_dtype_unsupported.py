"""A rehearsal pod asking bfloat16 of a T4 (compute capability 7.5) crash-loops with vLLM's own error, as the worker
refuses it before loading anything; --dtype auto falls back to float16 with vLLM's warning from 0.9.0 and serves."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

import pytest

from vllm_remedy.sim.cluster import Cluster
from vllm_remedy.sim.vllm_pod import timeline
from vllm_remedy.sim.vllm_pod.launch import Launch, plan
from vllm_remedy.sim.vllm_pod.reality import EXACT
from vllm_remedy.vllm.cmdline import find_server
from vllm_remedy.vllm.outcomes import Failure
from vllm_remedy.vllm.startup_log import classify, parse_startup_log

LLAMA = "meta-llama/Llama-3.2-1B-Instruct"  # torch_dtype bfloat16
T4 = "Tesla-T4"
NODE = {"metadata": {"labels": {"nvidia.com/gpu.product": T4}}}
REFUSAL = ("ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your Tesla T4 GPU "
           "has compute capability 7.5.")


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    from vllm_remedy.sim.clock import Clock
    from vllm_remedy.sim.seed import make_node
    from vllm_remedy.sim.vllm_pod import install

    c = Cluster("t", clock=Clock(speed=600), reality=EXACT)
    install(c)
    c.store.create("nodes", make_node({"name": "t4-1", "gpu": {"product": T4, "count": 1}}, "t"))
    c.start()
    try:
        yield c
    finally:
        c.stop()


def container(args: list[str], image: str) -> dict:
    return {"name": "vllm", "image": image, "command": ["vllm", "serve"], "args": args, "env": [],
            "ports": [{"containerPort": 8000}], "readinessProbe": {"httpGet": {"path": "/health", "port": 8000}},
            "resources": {"limits": {"nvidia.com/gpu": "1"}}}


def pod(name: str, args: list[str], image: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "llm"},
            "spec": {"nodeSelector": {"nvidia.com/gpu.product": T4}, "containers": [container(args, image)]}}


def status(c: Cluster, name: str) -> dict:
    statuses = (c.store.get("pods", "llm", name).get("status") or {}).get("containerStatuses") or []
    return next((s for s in statuses if s["name"] == "vllm"), {})


def launch(args: list[str], image: str) -> Launch:
    c = container(args, image)
    got = plan(find_server({"containers": [c]}), c, NODE)
    assert isinstance(got, Launch)
    return got


@pytest.mark.parametrize("image", ["vllm/vllm-openai:v0.8.5", "vllm/vllm-openai:v0.34.0"])
def test_a_t4_pod_with_dtype_bfloat16_crash_loops_with_vllms_error(cluster, image):
    cluster.store.create("pods", pod("bf16", [LLAMA, "--dtype", "bfloat16"], image))
    assert cluster.wait_for(lambda: "CrashLoopBackOff" in str(status(cluster, "bf16").get("state")), 8), \
        status(cluster, "bf16")
    text = cluster.read_log("llm", "bf16", previous=True)
    report = parse_startup_log(text)
    assert classify(report) is Failure.DTYPE_UNSUPPORTED
    assert report.failure_detail == {"gpu_name": "Tesla T4", "capability": "7.5"}
    assert REFUSAL in text and "Starting to load model" not in text and "dtype=torch.bfloat16" in text


def test_auto_on_a_t4_falls_back_to_float16_from_0_9_1_and_serves(cluster):
    cluster.store.create("pods", pod("auto", [LLAMA], "vllm/vllm-openai:v0.34.0"))
    assert cluster.wait_for(lambda: status(cluster, "auto").get("ready") is True, 8), status(cluster, "auto")
    text = cluster.read_log("llm", "auto")
    assert classify(parse_startup_log(text)) is Failure.NONE
    assert "dtype=torch.float16" in text
    assert any("WARNING" in line and "Your device 'Tesla T4' (with compute capability 7.5) doesn't support "
               "torch.bfloat16. Falling back to torch.float16 for compatibility." in line for line in text.splitlines())


def test_auto_on_a_t4_before_0_9_0_takes_bfloat16_and_is_refused():
    start = timeline.plan_start(launch([LLAMA], "vllm/vllm-openai:v0.8.5"), datetime(2026, 1, 1))
    assert start.exit is not None and (start.exit.after, start.exit.code) == (timeline.BOOT_SECONDS + 1.0, 1)
    assert any(REFUSAL in line for line in start.exit.log)


def test_auto_on_a_t4_falls_back_in_0_9_0s_words(cluster):
    # config.py@0.9.0 l.3084-3101: "Your %s device%s doesn't support %s. Falling back to %s for compatibility."
    cluster.store.create("pods", pod("auto090", [LLAMA], "vllm/vllm-openai:v0.9.0"))
    assert cluster.wait_for(lambda: status(cluster, "auto090").get("ready") is True, 8), status(cluster, "auto090")
    text = cluster.read_log("llm", "auto090")
    assert "Your Tesla T4 device (with compute capability 7.5) doesn't support torch.bfloat16. Falling back to " \
           "torch.float16 for compatibility." in text and "dtype=torch.float16" in text


def test_half_on_a_t4_starts():
    start = timeline.plan_start(launch([LLAMA, "--dtype", "half"], "vllm/vllm-openai:v0.8.5"), datetime(2026, 1, 1))
    assert start.exit is None
