"""A repeated ``--hf-overrides`` typed on `estimate` and `plan`: vLLM's argparse converts every occurrence with the
flag's type as it parses, so an earlier value the release's type refuses stops the start even though the last one
is valid (``type=json.loads`` before 0.9.0; ``union_dict_and_str`` from 0.9.0, which keeps text without braces and
from 0.10.0 takes blanks around the braces as braces too: engine/arg_utils.py@0.8.5, @0.9.2, @0.10.0)."""

from __future__ import annotations

import json

import pytest

LLAMA = ["--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "NVIDIA-L40S", "--max-model-len", "16384"]
VALID = '{"num_hidden_layers": 16}'


def _one_line(got) -> str:
    assert got.returncode == 2 and got.stdout == "" and got.stderr.count("\n") == 1, (got.stdout, got.stderr)
    return got.stderr


@pytest.mark.parametrize(("first", "version", "words"), [
    ("bad", "0.8.5", "argument --hf-overrides: invalid loads value: 'bad'"),
    ("{bad}", "0.10.2", "argument --hf-overrides: Value {bad} cannot be converted to <function loads"),
    (" {bad}", "0.10.0", "argument --hf-overrides: Value  {bad} cannot be converted to <function loads"),
])
@pytest.mark.parametrize("command", ["estimate", "plan"])
def test_an_earlier_value_the_release_refuses_stops_it(cli, command, first, version, words):
    extra = ["--target-concurrency", "20"] if command == "plan" else []
    err = _one_line(cli(command, *LLAMA, "--vllm-version", version, "--hf-overrides", first, "--hf-overrides", VALID,
                        *extra))
    assert f"hf-overrides: vLLM {version} refuses the value at argument parsing" in err and words in err, err


@pytest.mark.parametrize(("first", "version"), [("bad", "0.10.2"), (" {bad}", "0.9.2")])
def test_an_earlier_value_kept_as_text_is_replaced_by_the_last(cli, first, version):
    """From 0.9.0 text without braces is kept as a string (0.9.x: no blanks before the brace either), and argparse
    keeps the last value: the 16-layer override is sized."""
    got = cli("estimate", *LLAMA, "--vllm-version", version, "--hf-overrides", first, "--hf-overrides", VALID,
              "-o", "json")
    assert got.returncode == 0, got.stderr
    data = json.loads(got.stdout)
    assert data["flags"]["hf-overrides"] == VALID and data["weights_gib"] < 9.0, data
