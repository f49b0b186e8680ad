"""A config.json is read as vLLM and transformers read it, or refused in one ``cannot predict <arch>: <what>`` line:
no architecture named (vLLM finds no model class), an encoder-decoder (Whisper), and transformers' own defaults for
keys a published config leaves out (Gemma 2's tied embeddings). Configs come from the project's Hub-compatible
server on 127.0.0.1 (HF_ENDPOINT), as a served model's would.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import run_cli
from fixtures.hf_hub_server import HubServer, Repo, hub_server
from vllm_remedy import hub as hub_module

ARGS = ("--gpu", "NVIDIA-L40S", "--max-model-len", "4096", "--vllm-version", "0.11.0")
LLAMA_1B: dict[str, Any] = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 2048,
                            "num_hidden_layers": 16, "num_attention_heads": 32, "num_key_value_heads": 8,
                            "head_dim": 64, "intermediate_size": 8192, "vocab_size": 128256,
                            "max_position_embeddings": 131072, "torch_dtype": "bfloat16"}
#: openai/whisper-large-v3's config.json, the keys that decide its shape (it states num_hidden_layers too).
WHISPER: dict[str, Any] = {"architectures": ["WhisperForConditionalGeneration"], "model_type": "whisper",
                           "is_encoder_decoder": True, "d_model": 1280, "encoder_layers": 32, "decoder_layers": 32,
                           "num_hidden_layers": 32, "encoder_attention_heads": 20, "decoder_attention_heads": 20,
                           "vocab_size": 51866, "max_target_positions": 448, "torch_dtype": "float16"}
#: google/gemma-2-9b-it's config.json as transformers saves it: tie_word_embeddings equals Gemma2Config's default
#: (True) and PretrainedConfig's, so save_pretrained leaves it out.
GEMMA2_9B: dict[str, Any] = {"architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2", "hidden_size": 3584,
                             "num_hidden_layers": 42, "num_attention_heads": 16, "num_key_value_heads": 8,
                             "head_dim": 256, "intermediate_size": 14336, "vocab_size": 256000,
                             "max_position_embeddings": 8192, "sliding_window": 4096, "final_logit_softcapping": 30.0,
                             "query_pre_attn_scalar": 256, "torch_dtype": "float32"}
NO_ARCH = {"acme/no-arch-null": {**LLAMA_1B, "architectures": None}, "acme/no-arch-empty": {**LLAMA_1B,
           "architectures": []}, "acme/no-arch-string": {**LLAMA_1B, "architectures": "LlamaForCausalLM"},
           "acme/no-arch-missing": {k: v for k, v in LLAMA_1B.items() if k != "architectures"}}


@pytest.fixture
def hub() -> Iterator[HubServer]:
    repos = {"openai/whisper-large-v3": WHISPER, "acme/gemma-2-9b-it-mirror": GEMMA2_9B, **NO_ARCH}
    with hub_server({repo: Repo({"config.json": config}) for repo, config in repos.items()}) as server:
        yield server


def estimate(hub: HubServer, home: Path, model: str, *args: str):
    saved = dict(os.environ)
    os.environ.update({"HF_HOME": str(home), "HF_HUB_OFFLINE": "0", "HF_ENDPOINT": hub.url})
    try:
        return run_cli("estimate", "--model", model, *ARGS, *args)
    finally:
        os.environ.clear()
        os.environ.update(saved)


@pytest.mark.parametrize("repo, what", [
    ("acme/no-arch-null", "config.json names no architecture (architectures: null)"),
    ("acme/no-arch-empty", "config.json names no architecture (architectures: [])"),
    ("acme/no-arch-missing", "config.json names no architecture (architectures: missing)"),
    ("acme/no-arch-string", "architectures is the string 'LlamaForCausalLM', not a list of class names"),
])
def test_a_config_naming_no_architecture_is_not_sized_as_llama(hub, tmp_path, repo, what):
    got = estimate(hub, tmp_path, repo)
    assert got.returncode == 2, got.stdout
    assert got.stderr.startswith(f"vllm-remedy: error: cannot predict llama: {what}"), got.stderr


def test_an_encoder_decoder_names_its_architecture_and_what_is_not_modelled(hub, tmp_path):
    got = estimate(hub, tmp_path, "openai/whisper-large-v3")
    assert got.returncode == 2, got.stdout
    assert got.stderr.startswith("vllm-remedy: error: cannot predict WhisperForConditionalGeneration: an "
                                 "encoder-decoder model (encoder_layers 32, decoder_layers 32): its encoder and "
                                 "cross-attention KV cache are not modelled"), got.stderr


def test_gemma2_without_the_key_is_tied_as_transformers_fills_it(hub, tmp_path):
    """Untied, the 256000 x 3584 LM head would add 1.71 GiB of bf16 weights vLLM never loads."""
    got = estimate(hub, tmp_path, "acme/gemma-2-9b-it-mirror", "-o", "json")
    catalog = run_cli("estimate", "--model", "google/gemma-2-9b-it", *ARGS, "-o", "json")
    assert got.returncode == catalog.returncode == 0, got.stderr + catalog.stderr
    mirror, reviewed = json.loads(got.stdout), json.loads(catalog.stdout)
    assert (mirror["model_source"], reviewed["model_source"]) == (f"the Hub ({hub.url})", "catalog")
    assert abs(mirror["weights_gib"] - reviewed["weights_gib"]) < 0.05, (mirror["weights_gib"], reviewed["weights_gib"])


@pytest.mark.parametrize("model_type, tied", [("gemma2", True), ("gemma", True), ("cohere", True),
                                              ("llama", False), ("qwen2", False), ("gpt2", True)])
def test_the_config_classes_default_decides_an_omitted_tie(model_type, tied):
    config = {**LLAMA_1B, "model_type": model_type}
    assert hub_module.spec_from_config(config, "m", "m").tie_word_embeddings is tied
    assert hub_module.spec_from_config({**config, "tie_word_embeddings": not tied}, "m", "m").tie_word_embeddings is (
        not tied)
