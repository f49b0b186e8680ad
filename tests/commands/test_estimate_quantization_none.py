"""`--quantization None` is no quantization wherever argparse takes it: its type (``optional_type``,
engine/arg_utils.py@0.11.0; ``nullable_str`` before) turns the text "None" into None, so the estimate is the
unquantized one, not "cannot predict --quantization none"."""

from __future__ import annotations

import json

from conftest import run_cli

BASE = ("estimate", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "NVIDIA-L40S", "--vllm-version", "0.11.0",
        "--max-model-len", "8192", "-o", "json")


def _kv(*extra: str) -> int:
    got = run_cli(*BASE, *extra)
    assert got.returncode == 0, got.stderr
    return int(json.loads(got.stdout)["kv_cache_tokens"])


def test_the_text_none_is_the_unquantized_estimate():
    assert _kv("--quantization", "None") == _kv()
