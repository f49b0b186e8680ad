"""estimate and plan (without -f) take vLLM's --enable-lora and --speculative-config and answer the memory model's
"cannot predict <flag>", as check -f does for a manifest, instead of argparse's "unrecognized arguments" for flags
`vllm serve` accepts (review 4, L3)."""

from __future__ import annotations

import json

import pytest

ARGS = ["--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "NVIDIA-L4", "--vllm-version", "0.11.0"]
NGRAM = json.dumps({"method": "ngram", "num_speculative_tokens": 3})


@pytest.mark.parametrize("command", ["estimate", "plan"])
@pytest.mark.parametrize(("extra", "named"), [
    (["--enable-lora"], "--enable-lora"),
    (["--enable-lora", "--max-loras", "4", "--max-lora-rank", "64"],
     "--enable-lora (--max-loras 4, --max-lora-rank 64)"),
    (["--speculative-config", NGRAM], "--speculative-config"),
    (["-sc", NGRAM], "--speculative-config"),
])
def test_unmodelled_flags_are_cannot_predict(cli, command, extra, named):
    got = cli(command, *ARGS, *extra)
    assert got.returncode == 2, got.stdout + got.stderr
    assert "unrecognized arguments" not in got.stderr
    assert f"error: cannot predict {named}:" in got.stderr
    assert got.stdout == ""


def test_lora_sizes_without_enable_lora_change_nothing(cli):
    base = cli("estimate", *ARGS, "-o", "json")
    sized = cli("estimate", *ARGS, "--max-loras", "4", "--max-lora-rank", "64", "-o", "json")
    assert base.returncode == sized.returncode == 0, sized.stderr
    assert json.loads(sized.stdout)["kv_cache_tokens"] == json.loads(base.stdout)["kv_cache_tokens"]
