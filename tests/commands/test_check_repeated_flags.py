"""A flag given twice: vLLM's argparse types every occurrence, so an overridden value it refuses stops the start.

Third hostile review H2: `--max-model-len 16Ki --max-model-len 8192` on v0.11.0, `16k` twice on v0.8.3 and
`--max-num-seqs 1k --max-num-seqs 64` passed check because only the last occurrence was read.
"""

from __future__ import annotations

import json

import pytest

from vllm_remedy.remedies.predict import predict_template
from vllm_remedy.vllm.cmdline import find_server
from vllm_remedy.vllm.memory.occurrences import overridden_refusal

MODEL = ["--model", "meta-llama/Llama-3.1-8B-Instruct"]


def _spec(tag: str, args: list[str]) -> dict:
    return {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"},
            "containers": [{"name": "vllm", "image": f"vllm/vllm-openai:{tag}", "args": [*MODEL, *args]}]}


REFUSED = [
    ("v0.11.0", ["--max-model-len", "16Ki", "--max-model-len", "8192"], "max-model-len: vLLM 0.11.0 refuses '16Ki'"),
    ("v0.8.3", ["--max-model-len", "16k", "--max-model-len", "16k"], "max-model-len: vLLM 0.8.3 refuses '16k'"),
    ("v0.11.0", ["--max-num-seqs", "1k", "--max-num-seqs", "64", "--max-model-len", "8192"],
     "max-num-seqs: vLLM 0.11.0 refuses '1k'"),
]


@pytest.mark.parametrize(("tag", "args", "why"), REFUSED)
def test_check_reports_a_refused_occurrence_of_a_repeated_flag(cli, tmp_path, tag, args, why):
    path = tmp_path / "m.yaml"
    path.write_text(json.dumps({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "llm"},
                                "spec": {"template": {"spec": _spec(tag, args)}}}))
    got = cli("check", "-f", str(path), "-o", "json")
    assert got.returncode == 1, got.stdout + got.stderr
    (item,) = json.loads(got.stdout)["items"]
    reasons = [f["reason"] for f in item["findings"]]
    assert any(why in r for r in reasons), reasons
    # a literal the release refuses is fixed by its spelling, not by "literal values" (review L3)
    assert all("literal values" not in f["fix"] for f in item["findings"] if f["check"] == "flags"), item


def test_the_overridden_values_are_listed_and_judged_with_the_release():
    server = find_server(_spec("v0.11.0", ["--max-model-len", "16Ki", "--max-model-len=8192", "--max-num-seqs", "8"]))
    assert server.overridden() == [("max-model-len", "16Ki")]
    assert "refuses '16Ki'" in (overridden_refusal(server, server.flags, "0.11.0") or "")
    fine = find_server(_spec("v0.11.0", ["--max-model-len", "16k", "--max-model-len", "8192"]))
    assert overridden_refusal(fine, fine.flags, "0.11.0") is None  # 16k parses on 0.11.0: the later one wins


def test_the_prediction_of_a_template_says_vllm_stops_at_the_first():
    """drift and the deploys predict through predict_template: no figures for a start that never parses."""
    got = predict_template({"spec": _spec("v0.11.0", ["--max-model-len", "16Ki", "--max-model-len", "8192"])})
    assert got.estimate is None and "refuses '16Ki'" in got.note, got


def test_plan_f_stops_at_the_refused_occurrence_unless_the_command_line_replaces_the_flag(cli, tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text(json.dumps({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "llm"},
                                "spec": {"template": {"spec": _spec("v0.11.0", REFUSED[0][1])}}}))
    got = cli("plan", "-f", str(path))
    assert (got.returncode, got.stdout) == (2, ""), got.stdout
    assert got.stderr.startswith(f"vllm-remedy: error: {path}: max-model-len: vLLM 0.11.0 refuses '16Ki'"), got.stderr
    replaced = cli("plan", "-f", str(path), "--max-model-len", "4096")  # every occurrence replaced: nothing refused
    assert replaced.returncode == 0 and replaced.stderr == "", replaced.stderr
