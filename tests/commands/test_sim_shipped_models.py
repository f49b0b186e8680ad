"""`vllm-remedy sim up` with a seed that ships a model (``models: [{id, config}]``): it says how the tools run against
the cluster see that model (a Hugging Face cache in its state folder, read offline), and `drift` run so predicts the
world's model as its pods run it, instead of "no prediction ... the Hub is unreachable" (hostile15 H10)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from fixtures.drift_world import as_json, inventory
from fixtures.pyinfra_run import ROOT
from fixtures.restore_world import wait_until
from fixtures.sim_world import call
from fixtures.world_model import WORLD, WORLD_ID

JSON_PATCH = "application/json-patch+json"
DEPLOY = "/apis/apps/v1/namespaces/llm/deployments/llama-8b"
ARGS = [WORLD_ID, "--max-model-len", "16384", "--gpu-memory-utilization", "0.90"]


def test_drift_against_a_world_that_ships_its_model_predicts_it(cli, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:1")  # no Hub answers: the world's model is only shipped
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    seed, state = tmp_path / "seed.yaml", tmp_path / "state"
    seed.write_text(yaml.safe_dump({"extends": "runbook", "models": [{"id": WORLD_ID, "config": WORLD}]}))
    up = cli("sim", "up", "--background", "--state", str(state), "--speed", "600", "--seed", str(seed), "-o", "json")
    assert up.returncode == 0, up.stderr
    info = json.loads(up.stdout)
    try:
        assert info["tools_env"] == {"HF_HUB_CACHE": str(state / "hf-hub-cache"), "HF_HUB_OFFLINE": "1"}, info
        base = info["url"] + "/clusters/rehearsal"
        serve = [{"op": "replace", "path": "/spec/template/spec/containers/0/args", "value": ARGS}]
        assert call(base, "PATCH", DEPLOY, serve, content_type=JSON_PATCH)[0] == 200
        wait_until(lambda: call(base, "GET", DEPLOY)[2]["status"].get("updatedReplicas") == 2, 60, "the rollout")
        for name, value in info["tools_env"].items():
            monkeypatch.setenv(name, value)
        rules = tmp_path / "policy.yaml"
        rules.write_text(f"extends: {ROOT / 'policies' / 'default.yaml'}\ntarget: {{namespaces: [llm]}}\n"
                         "gpu: {products: [NVIDIA-L40S], per_pod: 1}\n")
        inv = inventory(tmp_path, info["kubeconfig"], str(rules))
        host = as_json(cli("drift", "-i", inv, "-o", "json"))["hosts"][0]
        checks = {c["check"]: c for c in host["checks"]}
        assert checks["prediction"]["status"] != "unknown", checks["prediction"]
        assert "KV cache" in checks["prediction"]["detail"], checks["prediction"]
    finally:
        assert cli("sim", "down", "--state", str(state)).returncode == 0
    # started again from its state: the seed's models are the pods' own again (the state holds no model)
    monkeypatch.delenv("HF_HUB_CACHE")
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    up = cli("sim", "up", "--background", "--state", str(state), "--speed", "600", "--seed", str(seed), "-o", "json")
    assert up.returncode == 0, up.stderr
    info = json.loads(up.stdout)
    try:
        base = info["url"] + "/clusters/rehearsal"
        longer = [{"op": "replace", "path": "/spec/template/spec/containers/0/args/2", "value": "8192"}]
        assert call(base, "PATCH", DEPLOY, longer, content_type=JSON_PATCH)[0] == 200
        wait_until(lambda: _ready(call(base, "GET", DEPLOY)[2]), 60, "the new revision's pods to be Ready")
    finally:
        assert cli("sim", "down", "--state", str(state)).returncode == 0


def _ready(dep: dict) -> bool:
    status = dep.get("status") or {}
    return status.get("updatedReplicas") == 2 and status.get("readyReplicas") == 2 and \
        status.get("observedGeneration") == dep["metadata"].get("generation")
