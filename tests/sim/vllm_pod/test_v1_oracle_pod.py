"""A rehearsal pod follows the V1 oracle's fallback (``vllm.v1_oracle``): on 0.8.5 an fp8 KV cache on an L40S
(no FlashAttention 3) starts vLLM's V0 engine, with the KV cache the tools predict for it; with VLLM_USE_V1=1 the
start ends before any memory is used. Before, the pod started V1 with fp8."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fixtures.sim_world import l40s_pod_cluster
from vllm_remedy.remedies.predict import predict_template
from vllm_remedy.sim.cluster import Cluster
from vllm_remedy.vllm.startup_log import parse_startup_log

QWEN7 = "Qwen/Qwen2.5-7B-Instruct"
IMAGE = "vllm/vllm-openai:v0.8.5"
ARGS = ["--max-model-len", "16384", "--kv-cache-dtype", "fp8"]


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with l40s_pod_cluster(2) as c:
        yield c


def pod(name: str, env: list[dict] | None = None) -> dict:
    spec = {"name": "vllm", "image": IMAGE, "command": ["vllm", "serve"], "args": [QWEN7, *ARGS],
            "ports": [{"containerPort": 8000}], "readinessProbe": {"httpGet": {"path": "/health", "port": 8000}},
            "resources": {"limits": {"nvidia.com/gpu": "1"}}, "env": env or []}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "llm"},
            "spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"}, "containers": [spec]}}


def _status(c: Cluster, name: str) -> dict:
    statuses = (c.store.get("pods", "llm", name).get("status") or {}).get("containerStatuses") or []
    return next((s for s in statuses if s["name"] == "vllm"), {})


def test_an_fp8_kv_pod_on_an_l40s_runs_v0_as_predicted(cluster):
    cluster.store.create("pods", pod("fp8"))
    assert cluster.wait_for(lambda: _status(cluster, "fp8").get("ready") is True, 8), _status(cluster, "fp8")
    text = cluster.read_log("llm", "fp8")
    report = parse_startup_log(text)
    assert report.engine == "v0" and "Initializing a V0 LLM engine (v0.8.5)" in text, text[:1500]
    predicted = predict_template(pod("fp8")).estimate
    assert predicted is not None and report.gpu_blocks == predicted.gpu_blocks, (report.gpu_blocks, predicted)


def test_vllm_use_v1_1_with_fp8_on_an_l40s_does_not_start(cluster):
    cluster.store.create("pods", pod("forced", [{"name": "VLLM_USE_V1", "value": "1"}]))
    assert cluster.wait_for(lambda: "CrashLoopBackOff" in str(_status(cluster, "forced").get("state")), 8)
    text = cluster.read_log("llm", "forced", previous=True)
    assert "Initializing a V1 LLM engine" not in text and "KV cache" not in text, text[-800:]
    # vLLM's own line (engine/arg_utils.py@0.8.5 _raise_or_fallback), not the tools' "cannot predict"
    assert "NotImplementedError: VLLM_USE_V1=1 is not supported with --kv-cache-dtype." in text, text[-800:]


def test_the_refusal_line_is_vllms():
    """What the pod ends with once its launch passes the KV cache dtype (``engine_select.refusal``)."""
    from vllm_remedy.sim.vllm_pod.engine_select import refusal

    forced = {"vllm-use-v1": "1"}
    assert refusal("0.8.5", (8, 9), forced, "fp8") == \
        "NotImplementedError: VLLM_USE_V1=1 is not supported with --kv-cache-dtype."
    assert refusal("0.8.5", (9, 0), forced, "fp8") is None and refusal("0.8.5", (8, 9), {}, "fp8") is None
    assert refusal("0.10.1", (7, 5), forced) == \
        "NotImplementedError: VLLM_USE_V1=1 is not supported with Compute Capability < 8.0."


def test_a_sampler_refusal_carries_the_sampler_variables_frames():
    """The refusing variable is the one engine_select judged (``refused_by``), not guessed from the exception text:
    VLLM_USE_FLASHINFER_SAMPLER=1 on a T4 at 0.24.0 (FlashInfer from capability 8.0) raises the sampler's
    RuntimeError, whose text holds no repr of the value, and its frames read that variable, never VLLM_USE_V1."""
    from vllm_remedy.sim.seed import make_node
    from vllm_remedy.sim.vllm_pod.launch import Refusal, plan
    from vllm_remedy.vllm.cmdline import find_server

    c = {"name": "vllm", "image": "vllm/vllm-openai:v0.24.0", "command": ["vllm", "serve"],
         "args": ["Qwen/Qwen2.5-1.5B-Instruct", "--dtype", "half"],
         "env": [{"name": "VLLM_USE_FLASHINFER_SAMPLER", "value": "1"}],
         "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    node = make_node({"name": "n", "gpu": {"product": "Tesla-T4", "count": 1}}, "t")
    got = plan(find_server({"containers": [c]}), c, node)
    assert isinstance(got, Refusal), got
    assert got.error.startswith("RuntimeError: FlashInfer top-p/top-k sampling unavailable"), got.error
    code = " ".join(frame[3] for frame in got.frames)
    assert "VLLM_USE_FLASHINFER_SAMPLER" in code and "VLLM_USE_V1" not in code, got.frames
