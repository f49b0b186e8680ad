"""A pod whose container sees no GPU dies "RuntimeError: No CUDA GPUs are available", which README classifies as
``world_size_exceeds_gpus`` (hostile review 15b, F13: `diagnose` called it ``unknown``). The logs are the rehearsal
pods' own (no ``nvidia.com/gpu`` limit: the device plugin mounts none), read back through the real CLI."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from kubernetes import client

from conftest import run_cli
from fixtures.served_pods import ended, served

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[client.CoreV1Api]:
    yield from served(tmp_path_factory.mktemp("kube"))


@pytest.mark.parametrize("tag", ["v0.8.5", "v0.11.0"])
def test_a_pod_without_a_gpu_is_world_size_exceeds_gpus(api, tag: str) -> None:
    name = f"nogpu-{tag.replace('.', '-')}"
    container = {"name": "vllm", "image": f"vllm/vllm-openai:{tag}", "command": ["vllm", "serve"],
                 "args": [LLAMA, "--max-model-len", "8192"],
                 "readinessProbe": {"httpGet": {"path": "/health", "port": 8000}}}
    api.create_namespaced_pod("llm", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                                      "spec": {"containers": [container]}})
    log, code = ended(api, name, "vllm")
    assert code == 1 and "RuntimeError: No CUDA GPUs are available" in log, (code, log[-800:])
    got = run_cli("diagnose", "--log", "-", "--exit-code", "1", "-o", "json", stdin=log)
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout)["failure"] == "world_size_exceeds_gpus", got.stdout[:800]
    text = run_cli("diagnose", "--log", "-", "--exit-code", "1", stdin=log).stdout
    assert "world_size_exceeds_gpus" in text and "unknown" not in text.split("\n", 3)[0], text[:600]
