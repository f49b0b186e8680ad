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
    assert got.estimate is None and got.refused and "refuses '16Ki'" in got.note, got


def test_plan_f_plans_the_kept_value_written_once(cli, tmp_path):
    """As for a refused spelling (remedies.budget.spelling): the start is refused, so the plan's first problem says
    so and its step writes the kept value, which the edit writes once (duplicates collapse)."""
    path = tmp_path / "m.yaml"
    path.write_text(json.dumps({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "llm"},
                                "spec": {"template": {"spec": _spec("v0.11.0", REFUSED[0][1])}}}))
    got = json.loads(cli("plan", "-f", str(path), "-o", "json").stdout)
    assert "refuses '16Ki'" in got["problem"] and "exit 2: the pod never starts" in got["problem"], got["problem"]
    assert got["steps"][0]["set"] == {"max-model-len": "8192"}, got["steps"]
    edited = cli("args", "set", "-f", str(path), "--set", "max-model-len=8192")
    assert edited.returncode == 0 and "16Ki" not in edited.stdout and edited.stdout.count("--max-model-len") == 1, \
        edited.stdout
    replaced = cli("plan", "-f", str(path), "--max-model-len", "4096", "-o", "json")  # every occurrence replaced
    assert "16Ki" not in json.loads(replaced.stdout)["problem"], replaced.stdout
