"""The OpenAI api_server module given the model as a word and no ``--model``: from 0.10.0 its parser takes an optional
``model_tag`` that only ``vllm serve`` copies to ``--model`` (entrypoints/cli/serve.py@0.10.0 l.42), so the module
loads ``ModelConfig.model`` (Qwen/Qwen3-0.6B from config.py@0.10.0 l.231). `check` said the command names no model
and advised "positional or --model", the form already written."""

from __future__ import annotations

from pathlib import Path

import yaml

from fixtures.check_batch import judge

GOOD = Path(__file__).resolve().parents[1] / "data" / "manifests" / "runbook" / "good-rev14.yaml"
LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
MODULE = ["python3", "-m", "vllm.entrypoints.openai.api_server"]
ARGS = [LLAMA, "--gpu-memory-utilization", "0.9", "--max-num-seqs", "64", "--max-model-len", "16384"]
CASES = {"image-default-0-10-0": ("0.10.0", None), "image-default-0-11-0": ("0.11.0", None),
         "module-0-34-0": ("0.34.0", MODULE)}


def _dep(name: str, release: str, command: list[str] | None) -> dict:
    dep = yaml.safe_load(GOOD.read_text())
    dep["metadata"]["name"] = name
    container = dep["spec"]["template"]["spec"]["containers"][0]
    container["image"], container["args"] = f"vllm/vllm-openai:v{release}", list(ARGS)
    container.pop("command", None)
    if command:
        container["command"] = command
    return dep


def test_check_says_the_module_ignores_the_word_and_advises_model(tmp_path: Path) -> None:
    items, _ = judge([_dep(name, *case) for name, case in CASES.items()], tmp_path, "--policy",
                     "policies/llama-8b.yaml")
    for name in CASES:
        found = [f for f in items[name]["findings"] if f["check"] == "model"]
        assert len(found) == 1, (name, items[name]["findings"])
        assert f"parses the positional {LLAMA} and ignores it" in found[0]["reason"], (name, found)
        assert "default model Qwen/Qwen3-0.6B" in found[0]["reason"], (name, found)
        assert found[0]["fix"] == f"pass the model as --model {LLAMA}", (name, found)
