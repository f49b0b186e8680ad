"""A game day whose world ships its own model (``models: [{id, config}]`` in its seed, no Hub): the game's deploys —
the real pyinfra CLI, separate processes — resolve it as the world's pods do, so the game rehearses the remediation,
not a failed prediction. Before, the pods started the shipped model while budget.py said "no prediction ... the Hub
is unreachable" and exited 1 (hostile15 H10)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from fixtures.pyinfra_run import ROOT
from fixtures.world_model import WORLD, WORLD_ID


def test_budget_in_a_world_without_a_hub_predicts_the_worlds_own_model(
        cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:1")  # no Hub answers: the world's model is only shipped
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    (tmp_path / "seed.yaml").write_text(yaml.safe_dump({"extends": "runbook",
                                                        "models": [{"id": WORLD_ID, "config": WORLD}]}))
    (tmp_path / "policy.yaml").write_text(f"extends: {ROOT / 'policies' / 'default.yaml'}\n"
                                          "target: {namespaces: [llm]}\ngpu: {products: [NVIDIA-L40S], per_pod: 1}\n")
    scenario = {"name": "world-model", "title": "the world's own model at too low a utilization",
                "target": {"namespace": "llm", "deployment": "llama-8b"}, "policy": "policy.yaml",
                "world": {"seed": "seed.yaml", "reality": "exact"},
                "fault": [{"what": "serve acme/World at utilization 0.65", "deployment": {
                    "change-cause": "world model", "set": {"spec.template.spec.containers[vllm].args": [
                        "acme/World", "--max-model-len", "16384", "--gpu-memory-utilization", "0.65"]}}}],
                "expect": {"detection": {"classification": "max_len_exceeds_kv"}},
                "deploys": [str(ROOT / "deploys" / "budget.py")],
                "success": {"ready-replicas": 2, "within": "1h"}}
    (tmp_path / "world.yaml").write_text(yaml.safe_dump(scenario, sort_keys=False))
    got = cli("gameday", "run", str(tmp_path / "world.yaml"), "--report-dir", str(tmp_path / "r"), "-o", "json")
    body = json.loads(got.stdout)
    checks = {c["name"]: c for c in body["checks"]}
    said = json.dumps(body["deploys"])
    assert "no prediction" not in said, said
    assert checks["deploys succeeded"]["ok"], (checks, said)
    assert body["passed"], (body["verdict"], said)
