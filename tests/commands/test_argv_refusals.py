"""Starts vLLM's argument parser stops (exit 2) show no predictions, and a flag the release does not have is one of
them (review 4, H5 and M4): check lists the refusal without a concurrency or start finding beside it, plan's
"current:" says argument_refused, and a flag in no release's table is refused on the releases the table is complete
for — never a valid spelling (alias, ``--no-`` form, underscores, a dotted key, a unique prefix)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from fixtures.vllm_deployment import manifest

DUP = ["--max-model-len", "16Ki", "--max-model-len", "16384"]


def test_check_shows_no_prediction_beside_an_argument_refusal(cli, tmp_path):
    got = cli("check", "-f", manifest(tmp_path, DUP, gpu="NVIDIA-L4"))
    assert got.returncode == 1, got.stdout + got.stderr
    assert "exit 2: the pod never starts" in got.stdout
    assert "concurrency [error]" not in got.stdout and "start [error]" not in got.stdout, got.stdout
    item = json.loads(cli("check", "-f", manifest(tmp_path, DUP, gpu="NVIDIA-L4"), "-o", "json").stdout)["items"][0]
    assert (item["prediction"]["outcome"], item["prediction"]["estimate"]) == ("argument_refused", None), item


def test_plan_current_says_argument_refused(cli, tmp_path):
    path = manifest(tmp_path, DUP, gpu="NVIDIA-L4")
    lines = cli("plan", "-f", path).stdout.splitlines()
    assert lines[2] == ("current:  argument_refused — vLLM's argument parser stops the start as written (exit 2), "
                        "nothing is loaded")
    data = json.loads(cli("plan", "-f", path, "-o", "json").stdout)
    assert data["current"]["as_written"] == "argument_refused"


@pytest.mark.parametrize("args", [["--bogus-flag"], ["--bogus-flag", "1"], ["--enable-lor"], ["--bogus_flag=2"]])
def test_a_flag_no_release_has_is_refused(cli, tmp_path, args):
    path = manifest(tmp_path, ["--max-model-len", "4096", *args])
    got = cli("check", "-f", path)
    assert got.returncode == 1, got.stdout
    assert f"flags [error]: vLLM 0.11.0 refuses {args[0]} at argument parsing: it has no such flag" in got.stdout
    assert "concurrency [error]" not in got.stdout
    plan = cli("plan", "-f", path).stdout
    assert "remove or correct it (planned without it)" in plan
    assert "remove the flags vLLM 0.11.0 does not have, or correct their spelling" in plan


@pytest.mark.parametrize("args", [
    ["-tp", "1"], ["--tensor_parallel_size", "1"], ["--no-enable-prefix-caching"], ["--max-num-seq", "64"],
    ["--compilation-config.level", "3"], ["--device-memory-utilization", "0.9"], ["--disable-log-requests"],
    ["--enable-lora"],
])
def test_valid_spellings_are_not_refused(cli, tmp_path, args):
    got = cli("check", "-f", manifest(tmp_path, ["--max-model-len", "4096", *args]))
    assert "it has no such flag" not in got.stdout, got.stdout


@pytest.mark.parametrize("image", ["vllm/vllm-openai:v0.9.2", "vllm/vllm-openai:latest"])
def test_a_release_the_table_was_not_read_for_is_not_judged(cli, tmp_path, image):
    got = cli("check", "-f", manifest(tmp_path, ["--max-model-len", "4096", "--bogus-flag"], image=image))
    assert "it has no such flag" not in got.stdout, got.stdout


def test_a_kubernetes_variable_in_args_is_judged_as_expanded(cli, tmp_path):
    """``--max-model-len "$(MML)"`` with env MML=16Ki: Kubernetes hands vLLM 16Ki, which 0.11 refuses (M6)."""
    got = cli("check", "-f", manifest(tmp_path, ["--max-model-len", "$(MML)"], env=[{"name": "MML", "value": "16Ki"}]))
    assert got.returncode == 1, got.stdout
    assert "refuses '16Ki' at argument parsing" in got.stdout and "is not an integer" not in got.stdout


def test_drifts_prediction_is_an_argument_refusal_for_a_flag_the_release_lacks(tmp_path):
    from vllm_remedy.remedies.predict import predict_template

    doc = yaml.safe_load(Path(manifest(tmp_path, ["--max-model-len", "4096", "--bogus-flag"])).read_text())
    got = predict_template(doc["spec"]["template"], None)
    assert got.estimate is None and got.refused, got
    assert got.note.startswith("vLLM 0.11.0 refuses --bogus-flag at argument parsing: it has no such flag"), got.note
