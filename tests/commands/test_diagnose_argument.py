"""`diagnose` on vLLM's argparse refusal (``vllm serve: error: argument --max-model-len: invalid human_readable_int
value: '16Ki'``) names the class, the flag and the value and prints the line as evidence (review 3, M8b: it said
unknown with no evidence) — on the real wording and on a rehearsal pod's log of the same start."""

from __future__ import annotations

import json
from datetime import datetime

import pytest

from vllm_remedy.sim.seed import make_node
from vllm_remedy.sim.vllm_pod import timeline
from vllm_remedy.sim.vllm_pod.launch import Refusal, plan
from vllm_remedy.vllm.cmdline import find_server

REAL = ("INFO 05-05 10:00:00 [__init__.py:239] Automatically detected platform cuda.\n"
        "usage: vllm serve [model_tag] [options]\n"
        "vllm serve: error: argument --max-model-len: invalid human_readable_int value: '16Ki'\n")


def test_the_real_error_is_classified_with_flag_value_and_evidence(cli, tmp_path):
    log = tmp_path / "previous.log"
    log.write_text(REAL)
    got = cli("diagnose", "--log", str(log))
    assert got.returncode == 0, got.stderr
    lines = got.stdout.splitlines()
    assert lines[0] == ("argument_refused: vLLM's argument parser refused a flag's value (exit 2, before anything "
                        "starts)")
    assert "  vllm serve: error: argument --max-model-len: invalid human_readable_int value: '16Ki'" in lines
    assert lines[-1] == ("hint: step 1: roll back to the last known-good revision, then write --max-model-len as a "
                         "plain integer: this release reads it as human_readable_int and refused '16Ki'")
    data = json.loads(cli("diagnose", "--log", str(log), "-o", "json").stdout)
    assert (data["failure"], data["failure_detail"]) == ("argument_refused", {
        "flag": "--max-model-len", "type_name": "human_readable_int", "value": "16Ki"})


@pytest.mark.parametrize(("tag", "value"), [("v0.8.5", "auto"), ("v0.11.0", "16Ki"), ("v0.8.3", "16k")])
def test_a_rehearsal_pods_log_of_the_refusal_diagnoses_the_same(cli, tmp_path, tag, value):
    c = {"name": "vllm", "image": f"vllm/vllm-openai:{tag}", "command": ["vllm", "serve"],
         "args": ["meta-llama/Llama-3.1-8B-Instruct", "--max-model-len", value],
         "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    got = plan(find_server({"containers": [c]}), c, make_node({"name": "n", "gpu": {"product": "NVIDIA-L40S",
                                                                                    "count": 1}}, "t"))
    assert isinstance(got, Refusal)
    run = timeline.plan_refusal(got, datetime(2026, 1, 1))
    assert run.exit is not None
    log = tmp_path / "previous.log"
    log.write_text("\n".join(run.exit.log) + "\n")
    data = json.loads(cli("diagnose", "--log", str(log), "--exit-code", "2", "-o", "json").stdout)
    assert data["failure"] == "argument_refused" and data["failure_detail"]["value"] == value, data
