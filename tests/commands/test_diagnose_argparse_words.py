"""`diagnose` on argparse's other refusals as vLLM prints them (review 4, M1: all four read `unknown`): a value
outside ``choices``, a flag without its value, a value on a store_true flag and a flag the release does not have
are all exit-2 argument refusals, with the flag and value as detail."""

from __future__ import annotations

import json

import pytest

CASES = [
    ("argument --kv-cache-dtype: invalid choice: 'fp9' (choose from 'auto', 'fp8', 'fp8_e4m3', 'fp8_e5m2')",
     {"flag": "--kv-cache-dtype", "value": "fp9", "choices": "'auto', 'fp8', 'fp8_e4m3', 'fp8_e5m2'"}),
    ("argument --max-model-len: expected one argument", {"flag": "--max-model-len"}),
    ("argument --enable-lora: ignored explicit argument 'true'", {"flag": "--enable-lora", "value": "true"}),
    ("unrecognized arguments: --kv-cache-memory-bytes 4G", {"unrecognized": "--kv-cache-memory-bytes 4G"}),
    # vLLM's parse_type wrapper (0.9+) and an ambiguous prefix (final probe, M1: both read `unknown`)
    ("argument --max-model-len: Value 16Ki cannot be converted to <function human_readable_int at 0x7f3a2c1e5a80>.",
     {"flag": "--max-model-len", "value": "16Ki", "converter": "<function human_readable_int at 0x7f3a2c1e5a80>."}),
    ("ambiguous option: --max-num could match --max-num-seqs, --max-num-batched-tokens",
     {"flag": "--max-num", "matches": "--max-num-seqs, --max-num-batched-tokens"}),
]


@pytest.mark.parametrize(("message", "detail"), CASES)
def test_argparse_refusals_are_argument_refused(cli, tmp_path, message, detail):
    log = tmp_path / "previous.log"
    log.write_text(f"usage: vllm serve [model_tag] [options]\nvllm serve: error: {message}\n")
    data = json.loads(cli("diagnose", "--log", str(log), "-o", "json").stdout)
    assert (data["failure"], data["failure_detail"]) == ("argument_refused", detail)
    text = cli("diagnose", "--log", str(log)).stdout
    assert f"  vllm serve: error: {message}" in text.splitlines()
    assert "remove or correct a flag this release does not have" in text
