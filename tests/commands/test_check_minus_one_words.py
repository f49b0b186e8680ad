"""`check`'s flag-bounds words for ``--max-model-len -1``: a literal integer that vLLM reads as auto-fit from 0.14.0
(config/model.py@0.14.0 l.175-184, @0.30.0 l.215-225), not "not a literal integer" as it said (hostile11 #7)."""

from __future__ import annotations

from pathlib import Path

import yaml

from fixtures.check_batch import judge

GOOD = Path(__file__).resolve().parents[1] / "data" / "manifests" / "runbook" / "good-rev14.yaml"


def test_minus_one_is_called_a_negative_literal_auto_fit(tmp_path: Path) -> None:
    dep = yaml.safe_load(GOOD.read_text())
    dep["metadata"]["name"] = "minus-one-0-30-0"
    container = dep["spec"]["template"]["spec"]["containers"][0]
    container["image"] = "vllm/vllm-openai:v0.30.0"
    container["command"], container["args"] = ["vllm", "serve"], ["meta-llama/Llama-3.1-8B-Instruct",
                                                                  "--max-model-len", "-1"]
    items, _ = judge([dep], tmp_path, "--policy", "policies/llama-8b.yaml")
    bounds = [f["reason"] for f in items["minus-one-0-30-0"]["findings"] if f["check"] == "flag-bounds"]
    assert len(bounds) == 1 and "not a literal integer" not in bounds[0], bounds
    assert "auto-fit from 0.14.0" in bounds[0], bounds
