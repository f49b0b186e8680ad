"""Rehearsal pods refused by vLLM's configuration checks render vLLM's own traceback, and ``diagnose`` reads each
back as ``config_refused``: V0 without chunked prefill refusing --max-num-batched-tokens below max-model-len
(``SchedulerConfig._verify_args``, config.py@0.8.5), VLLM_USE_V1=0 on 0.11.0 (``assert envs.VLLM_USE_V1``,
entrypoints/openai/api_server.py@0.11.0) and VLLM_USE_V1=false on 0.9.2 (``int()`` in envs.py@0.9.2). Each prints the
pod's own arguments and ends on its own frame."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from fixtures.sim_world import l40s_pod_cluster
from vllm_remedy.sim.cluster import Cluster

QWEN7 = "Qwen/Qwen2.5-7B-Instruct"


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with l40s_pod_cluster(4) as c:
        yield c


def pod(name: str, args: list[str], image: str, env: list[dict]) -> dict:
    spec = {"name": "vllm", "image": image, "command": ["vllm", "serve"], "args": [QWEN7, *args], "env": env,
            "ports": [{"containerPort": 8000}], "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "llm"},
            "spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"}, "containers": [spec]}}


def _status(c: Cluster, name: str) -> dict:
    statuses = (c.store.get("pods", "llm", name).get("status") or {}).get("containerStatuses") or []
    return next((s for s in statuses if s["name"] == "vllm"), {})


CASES = [
    pytest.param("batch", ["--max-model-len", "16384", "--max-num-batched-tokens", "4096"], "v0.8.5",
                 [{"name": "VLLM_USE_V1", "value": "0"}],
                 "raise ValueError(", "max_num_batched_tokens (4096) is smaller than max_model_len (16384)",
                 {"max_num_batched_tokens": 4096, "max_model_len": 16384}, id="v0-batched-tokens-0.8.5"),
    pytest.param("gone", ["--max-model-len", "16384"], "v0.11.0", [{"name": "VLLM_USE_V1", "value": "0"}],
                 "assert envs.VLLM_USE_V1", "AssertionError", {"variable": "VLLM_USE_V1"}, id="use-v1-0-on-0.11.0"),
    pytest.param("text", ["--max-model-len", "16384"], "v0.9.2", [{"name": "VLLM_USE_V1", "value": "false"}],
                 'lambda: bool(int(os.getenv("VLLM_USE_V1", "1"))),',
                 "ValueError: invalid literal for int() with base 10: 'false'",
                 {"variable": "VLLM_USE_V1", "value": "false"}, id="use-v1-false-on-0.9.2"),
]


@pytest.mark.parametrize(("name", "args", "tag", "env", "frame", "error", "detail"), CASES)
def test_the_refusal_renders_and_diagnoses_as_config_refused(cluster, cli, tmp_path, name, args, tag, env, frame,
                                                             error, detail):
    cluster.store.create("pods", pod(name, args, f"vllm/vllm-openai:{tag}", env))
    assert cluster.wait_for(lambda: "CrashLoopBackOff" in str(_status(cluster, name).get("state")), 8)
    text = cluster.read_log("llm", name, previous=True)
    lines = text.splitlines()
    assert error in text, text
    at = next(i for i, line in enumerate(lines) if error in line)
    assert lines[at - 1].strip().endswith(frame.strip()), lines[at - 3:at + 1]  # its own last frame
    args_line = next(line for line in lines if "non-default args" in line or "args: Namespace" in line)
    assert "16384" in args_line and "gpu_memory_utilization': 0.9" not in args_line, args_line
    assert "2048" not in args_line, args_line
    if "--max-num-batched-tokens" in args:
        assert "4096" in args_line, args_line
    log = tmp_path / f"{name}.log"
    log.write_text(text)
    got = cli("diagnose", "--log", str(log), "-o", "json")
    assert got.returncode == 0, got.stderr
    data = json.loads(got.stdout)
    assert data["failure"] == "config_refused", data["failure"]
    assert detail.items() <= data["failure_detail"].items(), data["failure_detail"]
