"""``--no-enforce-eager`` / ``--no-trust-remote-code`` where the flag is ``store_true`` (engine/arg_utils.py to
0.8.5; a BooleanOptionalAction dataclass field from 0.9.2, ``cmdline.booleans``): argparse has no ``--no-`` option
string there, so vLLM exits 2 ``unrecognized arguments: --no-enforce-eager`` (hostile review, argparse round 2,
finding 2). The planner's fix unsets the flag (store_true: absent is false)."""

from __future__ import annotations

import json

import pytest

from fixtures.vllm_deployment import manifest


@pytest.mark.parametrize(("version", "word"), [
    ("0.7.3", "--no-trust-remote-code"), ("0.8.5", "--no-enforce-eager"), ("0.8.5", "--no-enforce-eager=1"),
])
def test_check_refuses_the_negated_form_the_release_lacks(cli, tmp_path, version, word):
    path = manifest(tmp_path, ["--max-model-len", "4096", word], image=f"vllm/vllm-openai:v{version}")
    text = cli("check", "-f", path).stdout
    said = f"flags [error]: vLLM {version} refuses {word} at argument parsing (argparse: \"unrecognized arguments: " \
           f"{word}\") (exit 2: the pod never starts)"
    assert said in text, text
    assert "ignored explicit argument" not in text, text
    flag = word.split("=")[0].removeprefix("--no-")
    assert f"smallest fix (planner): unset --{flag}" in text, text
    item = json.loads(cli("check", "-f", path, "-o", "json").stdout)["items"][0]
    assert item["prediction"]["outcome"] == "argument_refused", item["prediction"]


@pytest.mark.parametrize("version", ["0.9.2", "0.11.0"])
def test_the_negated_form_is_taken_where_the_flag_is_a_boolean_optional_action(cli, tmp_path, version):
    path = manifest(tmp_path, ["--max-model-len", "4096", "--no-enforce-eager"], image=f"vllm/vllm-openai:v{version}")
    got = cli("check", "-f", path)
    assert got.returncode == 0, got.stdout
    assert "argument parsing" not in got.stdout, got.stdout


def test_plan_reads_it_as_check_does(cli, tmp_path):
    path = manifest(tmp_path, ["--max-model-len", "4096", "--no-enforce-eager"], image="vllm/vllm-openai:v0.8.5")
    data = json.loads(cli("plan", "-f", path, "-o", "json").stdout)
    assert data["current"]["as_written"] == "argument_refused"
    assert data["steps"][0]["unset"] == ["enforce-eager"], data["steps"][0]
