"""The rehearsal pod's V1 oracle reads ``use_mla`` as vLLM 0.10.2 does (``is_kv_cache_dtype_supported``,
platforms/cuda.py@0.10.2): under VLLM_MLA_DISABLE=1 a DeepSeek model takes FlashAttention, which keeps no fp8 cache on
an L40S (8.9), so VLLM_USE_V1=1 with --kv-cache-dtype fp8 is refused; with MLA on (FlashMLA) it serves. `estimate`
says the same for both; before, the pod asked whether the config has ``kv_lora_rank`` and served the refused one."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client

from conftest import run_cli
from fixtures.served_pods import ended, served
from vllm_remedy.sim.seed import ship_model

MODEL = "test/deepseek-v2-lite"
CONFIG = Path(__file__).resolve().parents[2] / "data" / "configs" / "DeepSeek-V2-Lite.json"
ARGS = [MODEL, "--max-model-len", "8192", "--kv-cache-dtype", "fp8"]


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[client.CoreV1Api]:
    ship_model({"id": MODEL, "config": json.loads(CONFIG.read_text())}, "test world")
    yield from served(tmp_path_factory.mktemp("kube"))


def _run(api: client.CoreV1Api, name: str, disable: str) -> tuple[str, int | None]:
    env = [{"name": "VLLM_USE_V1", "value": "1"}, {"name": "VLLM_MLA_DISABLE", "value": disable}]
    container = {"name": "vllm", "image": "vllm/vllm-openai:v0.10.2", "command": ["vllm", "serve"], "args": ARGS,
                 "env": env, "readinessProbe": {"httpGet": {"path": "/health", "port": 8000}},
                 "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    api.create_namespaced_pod("llm", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                                      "spec": {"containers": [container]}})
    return ended(api, name, "vllm")


@pytest.mark.parametrize(("disable", "refused"), [("1", True), ("0", False)])
def test_the_pod_and_estimate_read_use_mla_alike(api, disable, refused):
    got = run_cli("estimate", "--model-config", str(CONFIG), "--gpu", "NVIDIA-L40S", "--max-model-len", "8192",
                  "--vllm-version", "0.10.2", "--kv-cache-dtype", "fp8", "--vllm-use-v1", "1",
                  "--vllm-mla-disable", disable, "-o", "json")
    predicted = json.loads(got.stdout)["outcome"] == "config_refused"
    log, code = _run(api, f"mla-off-{disable}", disable)
    assert predicted is refused and (code is not None) is refused, (predicted, code, log[-1200:])
    if refused:
        assert "VLLM_USE_V1=1 is not supported with --kv-cache-dtype" in log, log[-1200:]
