"""A rehearsal pod whose vLLM release does not implement its model refuses the start from its own copy of the
release table (``sim/vllm_pod/registry.py``): Qwen3 on vllm/vllm-openai:v0.6.3 ends in the registry's
``_raise_for_unsupported`` (model_executor/models/registry.py@0.6.3), read back with real kubectl, and ``diagnose``
calls the log ``config_refused`` naming the architecture; the same Deployment on v0.8.4 (which registers
Qwen3ForCausalLM) serves."""

from __future__ import annotations

import json
import time

import pytest
import yaml

from fixtures import sim_world

V = "32"
live_sim = sim_world.live_sim


@pytest.fixture(autouse=True)
def _need_kubectl() -> None:
    sim_world.require_kubectl(V)


def qwen3(tag: str) -> dict:
    d = sim_world.deployment("qwen3", f"vllm/vllm-openai:{tag}", replicas=1)
    d["spec"]["template"]["spec"]["containers"][0]["args"] = ["--model", "Qwen/Qwen3-8B", "--max-model-len", "16384"]
    return d


def _wait(predicate, seconds: float = 30) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.2)
    return False


def test_qwen3_on_063_is_refused_with_vllms_words_and_diagnosed(live_sim, cli, tmp_path):
    k = live_sim.kubectl
    manifest = tmp_path / "qwen3.yaml"
    manifest.write_text(yaml.safe_dump(qwen3("v0.6.3")))
    got = k(V, "apply", "-f", str(manifest))
    assert got.returncode == 0, got.stderr

    def restarted() -> bool:
        out = k(V, "-n", "llm", "get", "pods", "-l", "app=qwen3", "-o", "json")
        pods = json.loads(out.stdout or "{}").get("items") or []
        return any((s.get("restartCount") or 0) >= 1 for p in pods
                   for s in (p.get("status") or {}).get("containerStatuses") or [])

    assert _wait(restarted), k(V, "-n", "llm", "get", "pods").stdout
    logs = k(V, "-n", "llm", "logs", "deploy/qwen3", "--previous")
    assert logs.returncode == 0, logs.stderr
    lines = logs.stdout.splitlines()
    at = next(i for i, line in enumerate(lines)
              if "ValueError: Model architectures ['Qwen3ForCausalLM'] are not supported for now. Supported "
                 "architectures: ['" in line)
    assert lines[at - 1].strip() == "raise ValueError(" and "_raise_for_unsupported" in lines[at - 2], lines[at - 6:at]
    assert "'LlamaForCausalLM'" in lines[at] and "'Qwen2ForCausalLM'" in lines[at]
    log = tmp_path / "qwen3.log"
    log.write_text(logs.stdout)
    got = cli("diagnose", "--log", str(log), "-o", "json")
    assert got.returncode == 0, got.stderr
    data = json.loads(got.stdout)
    assert data["failure"] == "config_refused", data["failure"]
    assert data["failure_detail"]["architecture"] == "Qwen3ForCausalLM", data["failure_detail"]


def test_qwen3_on_084_serves(live_sim, tmp_path):
    k = live_sim.kubectl
    manifest = tmp_path / "qwen3.yaml"
    manifest.write_text(yaml.safe_dump(qwen3("v0.8.4")))
    assert k(V, "apply", "-f", str(manifest)).returncode == 0
    ready = k(V, "-n", "llm", "rollout", "status", "deploy/qwen3", "--timeout=60s")
    assert ready.returncode == 0, ready.stderr
