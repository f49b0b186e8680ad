"""A rehearsal pod with VLLM_USE_V1=0 in its env on 0.8-0.10 starts vLLM's V0 engine, as the release does
(``vllm.engine_env``): V0's log lines and V0's budget, the KV cache the tools predict for that pod; its V0 failure is
read back by ``diagnose``; 0.11.0 refuses the value. Before, the pod ignored the variable and started V1."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fixtures.sim_world import l40s_pod_cluster
from vllm_remedy.remedies.predict import predict_template
from vllm_remedy.sim.cluster import Cluster
from vllm_remedy.vllm.outcomes import Failure
from vllm_remedy.vllm.startup_log import classify, parse_startup_log

QWEN7 = "Qwen/Qwen2.5-7B-Instruct"
V0 = [{"name": "VLLM_USE_V1", "value": "0"}]


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with l40s_pod_cluster(4) as c:
        yield c


def pod(name: str, args: list[str], image: str = "vllm/vllm-openai:v0.9.2", **container: object) -> dict:
    spec = {"name": "vllm", "image": image, "command": ["vllm", "serve"], "args": [QWEN7, *args],
            "ports": [{"containerPort": 8000}], "readinessProbe": {"httpGet": {"path": "/health", "port": 8000}},
            "resources": {"limits": {"nvidia.com/gpu": "1"}}, **container}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "llm"},
            "spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"}, "containers": [spec]}}


def _status(c: Cluster, name: str) -> dict:
    statuses = (c.store.get("pods", "llm", name).get("status") or {}).get("containerStatuses") or []
    return next((s for s in statuses if s["name"] == "vllm"), {})


@pytest.mark.parametrize(("image", "version"), [("vllm/vllm-openai:v0.9.2", "0.9.2"),
                                                ("vllm/vllm-openai:v0.10.2", "0.10.2")])
def test_a_v0_pod_logs_the_v0_engine_and_the_kv_cache_the_tools_predict(cluster, image, version):
    args = ["--max-model-len", "16384"]
    for name, env in (("v0", V0), ("default", [])):
        cluster.store.create("pods", pod(name, args, image, env=env))
    for name in ("v0", "default"):
        assert cluster.wait_for(lambda n=name: _status(cluster, n).get("ready") is True, 8), _status(cluster, name)
    v0, default = (parse_startup_log(cluster.read_log("llm", n)) for n in ("v0", "default"))
    assert f"Initializing a V0 LLM engine (v{version})" in cluster.read_log("llm", "v0")
    assert (v0.engine, default.engine) == ("v0", "v1")
    predicted = predict_template(pod("v0", args, image, env=V0)).estimate
    # the pods start as estimated; V0 logs its cache as "# cuda blocks: N" (16 tokens each), V1 in tokens
    assert predicted is not None and v0.gpu_blocks == predicted.gpu_blocks, (v0.gpu_blocks, predicted)
    assert v0.gpu_blocks * 16 != default.kv_cache_tokens


def test_diagnose_reads_the_v0_failure_back(cluster, cli, tmp_path):
    # V0 on 0.9.2 profiles a whole 32k prompt: at 0.45 of the L40S the cache holds 20,384 tokens (max_len_exceeds_kv)
    args = ["--max-model-len", "32768", "--gpu-memory-utilization", "0.45"]
    cluster.store.create("pods", pod("short", args, env=V0))
    assert cluster.wait_for(lambda: "CrashLoopBackOff" in str(_status(cluster, "short").get("state")), 8)
    text = cluster.read_log("llm", "short", previous=True)
    predicted = predict_template(pod("short", args, env=V0)).estimate
    assert predicted is not None and predicted.outcome.value == "max_len_exceeds_kv"
    report = parse_startup_log(text)
    assert classify(report) is Failure.MAX_LEN_EXCEEDS_KV and report.engine == "v0"
    log = tmp_path / "short.log"
    log.write_text(text)
    got = cli("diagnose", "--log", str(log))
    assert got.returncode == 0, got.stderr
    lines = got.stdout.splitlines()
    assert lines[0].startswith("max_len_exceeds_kv"), got.stdout
    assert "engine v0" in [" ".join(line.split()) for line in lines], got.stdout
    assert f"{predicted.kv_cache_tokens}" in got.stdout or f"{predicted.kv_cache_tokens:,}" in got.stdout, got.stdout


def test_0_11_0_refuses_vllm_use_v1_0(cluster):
    cluster.store.create("pods", pod("gone", ["--max-model-len", "16384"], "vllm/vllm-openai:v0.11.0", env=V0))
    assert cluster.wait_for(lambda: "CrashLoopBackOff" in str(_status(cluster, "gone").get("state")), 8)
    text = cluster.read_log("llm", "gone", previous=True)
    assert text.rstrip().splitlines()[-1].endswith("AssertionError"), text[-600:]


def test_vllm_use_v2_model_runner_0_runs_the_v1_runner_and_0_34_refuses_it(cluster):
    """VLLM_USE_V2_MODEL_RUNNER (``vllm.runner_env``) through the same path: 0 on 0.26 keeps the V1 model runner (its
    KV cache, as predicted for the pod), 0.34 refuses it."""
    runner = [{"name": "VLLM_USE_V2_MODEL_RUNNER", "value": "0"}]
    args, image = ["--max-model-len", "16384"], "vllm/vllm-openai:v0.26.0"
    cluster.store.create("pods", pod("v1-runner", args, image, env=runner))
    cluster.store.create("pods", pod("v2-runner", args, image))
    cluster.store.create("pods", pod("gone-runner", args, "vllm/vllm-openai:v0.34.0", env=runner))
    for name in ("v1-runner", "v2-runner"):
        assert cluster.wait_for(lambda n=name: _status(cluster, n).get("ready") is True, 8), _status(cluster, name)
    v1, v2 = (parse_startup_log(cluster.read_log("llm", n)) for n in ("v1-runner", "v2-runner"))
    predicted = predict_template(pod("v1-runner", args, image, env=runner)).estimate
    assert predicted is not None and v1.kv_cache_tokens == predicted.kv_cache_tokens != v2.kv_cache_tokens
    assert cluster.wait_for(lambda: "CrashLoopBackOff" in str(_status(cluster, "gone-runner").get("state")), 8)
    text = cluster.read_log("llm", "gone-runner", previous=True)
    assert "ValueError: VLLM_USE_V2_MODEL_RUNNER=0 is no longer supported" in text, text[-600:]
