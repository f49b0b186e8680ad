"""Speculative decoding and LoRA are "cannot predict" in every spelling vLLM's parser accepts (review 4, H2/H3):
dotted keys folded into ``--speculative-config`` (FlexibleArgumentParser), the ``-sc`` alias, 0.22+'s
``--spec-method`` / ``--spec-model`` / ``--spec-tokens``, and ``--enable_lora``; flags that enable neither stay
predictable."""

from __future__ import annotations

import pytest

from vllm_remedy.vllm.cmdline import find_server
from vllm_remedy.vllm.memory import EngineSettings

SPECULATIVE = [
    ["--speculative-config.method", "ngram", "--speculative-config.num_speculative_tokens", "3"],
    ["--speculative-config.method=ngram", "--speculative-config.num_speculative_tokens=3"],
    ["--speculative_config.num_speculative_tokens", "3"],
    ["--speculative-config.model", "meta-llama/Llama-3.2-1B-Instruct"],
    ["-sc", '{"method": "ngram", "num_speculative_tokens": 3}'],
    ["-sc.method", "ngram"],
    ["-sc.method=ngram"],
    ["--spec-method", "ngram", "--spec-tokens", "3"],
    ["--spec-model", "meta-llama/Llama-3.2-1B-Instruct"],
    ["--spec-tokens=3"],
    ["--spec_method", "ngram"],
]
LORA = [["--enable-lora"], ["--enable_lora"], ["--enable-lora", "--max-lora-rank", "64"]]
NEITHER = [
    ["--max-lora-rank", "64"],
    ["--max-loras", "4", "--max-cpu-loras", "8"],
    ["--enable-lora", "--no-enable-lora"],
    ["--speculative-config", "null"],
    ["--compilation-config.level", "3"],
]


def unmodelled(args: list[str], version: str = "0.34.0") -> str | None:
    spec = {"containers": [{"name": "vllm", "image": f"vllm/vllm-openai:v{version}",
                            "args": ["--model", "meta-llama/Llama-3.1-8B-Instruct", *args]}]}
    return EngineSettings.from_flags(find_server(spec).flags, version).unmodelled


@pytest.mark.parametrize("args", SPECULATIVE, ids=" ".join)
def test_speculative_spellings_cannot_be_predicted(args):
    got = unmodelled(args)
    assert got is not None and got.startswith("cannot predict -"), got
    assert "speculative decoding" in got
    assert got.split(":")[0].removeprefix("cannot predict ").lstrip("-").replace("_", "-") in {
        "speculative-config.method", "speculative-config.num-speculative-tokens", "speculative-config.model",
        "speculative-config", "sc.method", "spec-method", "spec-model", "spec-tokens"}


@pytest.mark.parametrize("args", LORA, ids=" ".join)
def test_lora_spellings_cannot_be_predicted(args):
    assert (unmodelled(args) or "").startswith("cannot predict --enable-lora")


@pytest.mark.parametrize("args", NEITHER, ids=" ".join)
def test_flags_that_enable_neither_stay_predictable(args):
    assert unmodelled(args) is None
