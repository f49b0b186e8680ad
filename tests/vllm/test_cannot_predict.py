"""What the memory model cannot size is one ``cannot predict <arch>: <what>`` line, decided by the architecture's
name when the config leaves out the keys that mark its layers (the hostile review's silent Llama-sized guesses)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from vllm_remedy.errors import UserError
from vllm_remedy.vllm import architectures, catalog
from vllm_remedy.vllm.catalog import ModelSpec

DATA = Path(__file__).resolve().parents[1] / "data"
LLAMA = {"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
         "intermediate_size": 14336, "vocab_size": 128256, "max_position_embeddings": 8192, "torch_dtype": "bfloat16"}
# MiniMaxAI/MiniMax-Text-01's config.json, the keys the memory model reads: 70 of its 80 layers are lightning
# (linear) attention, attn_type_list 0; every 8th is softmax attention, 1.
MINIMAX = {"architectures": ["MiniMaxText01ForCausalLM"], "model_type": "MiniMaxText01", "hidden_size": 6144,
           "num_hidden_layers": 80, "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 128,
           "intermediate_size": 9216, "vocab_size": 200064, "max_position_embeddings": 10240000,
           "num_local_experts": 32, "num_experts_per_tok": 2, "rope_theta": 10000000,
           "attn_type_list": ([0] * 7 + [1]) * 10, "torch_dtype": "bfloat16"}
STATEFUL = "vLLM runs it with state-space, linear-attention or recurrent layers, whose cache is not per-token K/V; " \
           "not modelled"
UNKNOWN = "not an architecture vLLM implements (no such name in its model registry at 0.19.0 or 0.34.0; vLLM refuses " \
          "it at start unless its Transformers backend runs it)"


def refusal(config: dict[str, Any]) -> str:
    with pytest.raises(UserError) as err:
        ModelSpec.from_hf_config(config, "config.json")
    return str(err.value)


def test_minimax_text_01_is_refused_not_sized_as_attention_in_every_layer():
    assert refusal(MINIMAX) == f"cannot predict MiniMaxText01ForCausalLM: {STATEFUL}"


@pytest.mark.parametrize("arch", [
    "JambaForCausalLM", "MambaForCausalLM", "Mamba2ForCausalLM", "FalconMambaForCausalLM", "Qwen3NextForCausalLM",
    "FalconH1ForCausalLM", "NemotronHForCausalLM", "BambaForCausalLM", "Lfm2ForCausalLM", "Lfm2MoeForCausalLM",
    "MiniMaxForCausalLM", "MiniMaxM1ForCausalLM", "MiniMaxVL01ForConditionalGeneration", "RwkvForCausalLM",
    "RecurrentGemmaForCausalLM", "Zamba2ForCausalLM", "GraniteMoeHybridForCausalLM", "Plamo2ForCausalLM",
    "KimiLinearForCausalLM", "Phi4FlashForCausalLM", "Qwen3_5ForConditionalGeneration", "Qwen3_5ForCausalLM",
    "KimiK3ForConditionalGeneration",
])
def test_a_stripped_hybrid_family_is_refused_by_its_name(arch):
    # Llama-shaped: none of layers_block_type, ssm_state_size, attn_type_list, layer_types ... is left to key on.
    assert refusal({"architectures": [arch], **LLAMA}) == f"cannot predict {arch}: {STATEFUL}"


def test_a_hybrid_converted_to_a_pooling_model_is_still_refused():
    # vLLM's registry runs FalconH1ForSequenceClassification as FalconH1ForCausalLM converted (``_normalize_arch``).
    arch = "FalconH1ForSequenceClassification"
    assert refusal({"architectures": [arch], **LLAMA}) == f"cannot predict {arch}: {STATEFUL}"


@pytest.mark.parametrize("kind", ["jamba", "mamba", "qwen3_next", "nemotron_h", "recurrent_gemma", "rwkv"])
def test_a_hybrid_model_type_without_architectures_is_refused(kind):
    assert refusal({"model_type": kind, **LLAMA}) == f"cannot predict {kind}: {STATEFUL}"


def test_an_architecture_vllm_does_not_implement_is_refused():
    assert refusal({"architectures": ["SomethingNewForCausalLM"], **LLAMA}) == \
        f"cannot predict SomethingNewForCausalLM: {UNKNOWN}"


def test_vllm_takes_the_first_listed_architecture_it_implements():
    # vLLM's registry tries each listed name in turn; the first it resolves decides.
    assert ModelSpec.from_hf_config({"architectures": ["SomethingNew", "LlamaForCausalLM"], **LLAMA}, "x").num_layers \
        == 32
    assert refusal({"architectures": ["SomethingNew", "JambaForCausalLM"], **LLAMA}) == \
        f"cannot predict JambaForCausalLM: {STATEFUL}"


def test_architectures_only_later_releases_implement_are_sized():
    # DeepseekV4 (0.28) and Inkling (0.26) are in the 0.34.0 registry, not the 0.19.0 one; Baichuan left in 0.23.
    for arch in ("DeepseekV4ForCausalLM", "InklingForCausalLM", "BaichuanForCausalLM"):
        assert architectures.resolve(arch) == arch


def test_a_pooling_conversion_of_a_plain_decoder_is_sized():
    assert architectures.resolve("LlamaForSequenceClassification") == "LlamaForCausalLM"
    assert ModelSpec.from_hf_config({"architectures": ["Qwen2ForRewardModel"], **LLAMA}, "x").num_kv_heads == 8


def test_every_catalog_and_calibration_architecture_is_implemented_and_not_stateful():
    for entry in catalog._load("models.yaml")["models"]:
        archs = entry["config"]["architectures"]
        assert architectures.resolve(archs[0]) == archs[0], entry["id"]
        assert archs[0] not in architectures.STATEFUL_ARCHITECTURES
    cases = [yaml.safe_load(p.read_text()) for p in sorted((DATA / "calibration").glob("*.yaml"))]
    inline = [c for c in cases if isinstance(c.get("model_config"), dict)]
    assert inline
    for case in inline:
        ModelSpec.from_hf_config(case["model_config"], case["model"], case.get("model_params_b"))


@pytest.mark.parametrize("arch", ["DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM"])
def test_deepseek_without_kv_lora_rank_is_refused_not_sized_as_multi_head(arch):
    config = json.loads((DATA / "configs" / "DeepSeek-V2-Lite.json").read_text())
    del config["kv_lora_rank"]
    config["architectures"] = [arch]
    assert refusal(config) == f"cannot predict {arch}: kv_lora_rank is missing (its MLA latent width)"


VISION = {
    "LlavaForConditionalGeneration": "llava",
    "LlavaNextForConditionalGeneration": "llava_next",
    "Qwen2VLForConditionalGeneration": "qwen2_vl",
    "Gemma3ForConditionalGeneration": "gemma3",
}


@pytest.mark.parametrize("arch", sorted(VISION))
def test_a_vision_language_model_without_vision_config_is_refused(arch):
    config = {"architectures": [arch], "model_type": VISION[arch], "text_config": {**LLAMA, "model_type": "llama"}}
    assert refusal(config) == f"cannot predict {arch}: vision_config is missing (its vision tower's size)"


# A vision_config built with a class whose defaults the project holds takes them (tests/commands/
# test_estimate_vision_defaults.py); Llava's ``CONFIG_MAPPING[vision_config["model_type"]]`` with a class it does not
# hold (pixtral) fills nothing, so a size it leaves out is still refused.
@pytest.mark.parametrize("arch", ["LlavaForConditionalGeneration", "LlavaNextForConditionalGeneration"])
def test_a_vision_config_without_its_hidden_size_is_refused(arch):
    config = {"architectures": [arch], "model_type": VISION[arch], "text_config": {**LLAMA, "model_type": "llama"},
              "vision_config": {"model_type": "pixtral", "num_hidden_layers": 24, "patch_size": 14,
                                "image_size": 336}}
    assert refusal(config) == f"cannot predict {arch}: vision_config states no hidden_size / embed_dim or " \
                              "num_hidden_layers / depth"


@pytest.mark.parametrize(("config", "line"), [
    (MINIMAX, f"cannot predict MiniMaxText01ForCausalLM: {STATEFUL}"),
    ({"architectures": ["SomethingNewForCausalLM"], **LLAMA}, f"cannot predict SomethingNewForCausalLM: {UNKNOWN}"),
    ({"architectures": ["JambaForCausalLM"], **LLAMA}, f"cannot predict JambaForCausalLM: {STATEFUL}"),
])
@pytest.mark.parametrize("output", [(), ("-o", "json")])
def test_cli_refuses_in_one_line_in_both_outputs(tmp_path, cli, config, line, output):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    got = cli("estimate", "--model-config", str(path), "--gpu", "NVIDIA-H100-80GB-HBM3", "--vllm-version", "0.19.0",
              *output)
    assert got.returncode == 2 and got.stdout == ""
    assert got.stderr == f"vllm-remedy: error: {line}\n"
