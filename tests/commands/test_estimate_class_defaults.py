"""estimate on hand-written config.json files that leave keys out: vLLM reads config.json through the transformers
class its model_type names, so a missing key is that class's default (``vllm.config_defaults``), also inside
``vision_config``; where no class default is known, the answer is ``cannot predict <arch>: <key> missing``, never a
number the project made up (4 x hidden for the MLP, patch 14, no shared experts, an untied LM head)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

DATA = Path(__file__).resolve().parents[1] / "data"
RUN = ["--gpu", "NVIDIA-H100-80GB-HBM3", "--vllm-version", "0.11.0", "--max-model-len", "4096"]
LLAMA_TEXT = {"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
              "num_key_value_heads": 32, "intermediate_size": 11008, "vocab_size": 32064,
              "max_position_embeddings": 4096, "tie_word_embeddings": False}
# llava-hf/llava-1.5-7b-hf's vision_config, as its config.json states it.
CLIP_336 = {"model_type": "clip_vision_model", "hidden_size": 1024, "image_size": 336, "intermediate_size": 4096,
            "num_attention_heads": 16, "num_hidden_layers": 24, "patch_size": 14, "projection_dim": 768}
# Qwen2-VL-7B-Instruct's config.json (the keys the estimate reads).
QWEN2_VL = {"architectures": ["Qwen2VLForConditionalGeneration"], "model_type": "qwen2_vl", "hidden_size": 3584,
            "intermediate_size": 18944, "num_attention_heads": 28, "num_hidden_layers": 28, "num_key_value_heads": 4,
            "vocab_size": 152064, "max_position_embeddings": 32768, "tie_word_embeddings": False,
            "torch_dtype": "bfloat16", "rope_theta": 1000000.0,
            "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]},
            "vision_config": {"depth": 32, "embed_dim": 1280, "mlp_ratio": 4, "num_heads": 16, "in_chans": 3,
                              "hidden_size": 3584, "patch_size": 14, "spatial_merge_size": 2,
                              "spatial_patch_size": 14, "temporal_patch_size": 2}}


def _estimate(cli, tmp_path: Path, config: dict[str, Any], name: str = "config.json") -> Any:
    path = tmp_path / name
    path.write_text(json.dumps(config))
    return cli("estimate", "--model-config", str(path), *RUN, "-o", "json")


def _sized(cli, tmp_path: Path, config: dict[str, Any], name: str) -> dict[str, Any]:
    got = _estimate(cli, tmp_path, config, name)
    assert got.returncode == 0, got.stderr
    data = json.loads(got.stdout)
    for key in ("model", "model_source"):  # the path
        data.pop(key, None)
    return data


def _refused(cli, tmp_path: Path, config: dict[str, Any]) -> str:
    got = _estimate(cli, tmp_path, config)
    assert got.returncode == 2 and got.stdout == "", (got.returncode, got.stdout)
    return got.stderr.removeprefix("vllm-remedy: error: ").rstrip("\n")


def _without(mapping: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in mapping.items() if k not in keys}


def test_a_missing_intermediate_size_outside_the_table_is_cannot_predict_not_four_times_hidden(cli, tmp_path):
    """Starcoder2Config's default is not one the project read: 4 x hidden (12,288 here, right by chance for
    starcoder2-3b, wrong for a SwiGLU model) was sized silently before."""
    config = {"architectures": ["Starcoder2ForCausalLM"], "model_type": "starcoder2", "hidden_size": 3072,
              "num_hidden_layers": 30, "num_attention_heads": 24, "num_key_value_heads": 2, "vocab_size": 49152,
              "max_position_embeddings": 16384, "tie_word_embeddings": True}
    assert _refused(cli, tmp_path, config) == (
        "cannot predict Starcoder2ForCausalLM: intermediate_size missing (the MLP width; its config class gives no "
        "default this project has read)")


def test_a_qwen2_vl_config_stating_no_tie_is_untied_as_every_transformers_reads_it(cli, tmp_path):
    """Qwen2VLConfig's tie_word_embeddings is False in 4.46.3 (flat), 4.57.1 (answered from the text class) and 5.x
    (the composite). Before: PretrainedConfig's True for a model_type outside TIED_BY_DEFAULT, a tied LM head."""
    omitted = _sized(cli, tmp_path, _without(QWEN2_VL, "tie_word_embeddings"), "omitted.json")
    stated = _sized(cli, tmp_path, QWEN2_VL, "stated.json")
    assert omitted == stated


def test_a_llava_vision_config_without_patch_size_is_clips_32(cli, tmp_path):
    """LlavaConfig builds vision_config as CLIPVisionConfig (its stated model_type), whose patch_size is 32: the
    tower's patch embedding and the dummy image's patches follow it. Before: patch 14, silently."""
    base = {"architectures": ["LlavaForConditionalGeneration"], "model_type": "llava", "text_config": LLAMA_TEXT,
            "image_seq_length": 576}
    omitted = _sized(cli, tmp_path, {**base, "vision_config": _without(CLIP_336, "patch_size")}, "omitted.json")
    stated = _sized(cli, tmp_path, {**base, "vision_config": {**CLIP_336, "patch_size": 32}}, "stated.json")
    assert omitted == stated


def test_a_gemma3_vision_config_without_sizes_is_siglips_defaults(cli, tmp_path):
    """Gemma3Config builds vision_config with SiglipVisionConfig whatever it states (model_type too): its 768 / 3072 /
    12 layers / patch 16 / 224 px fill what is left out. Before: cannot predict (no hidden_size) unless the
    vision_config named siglip_vision_model."""
    gemma = json.loads((DATA / "configs" / "gemma-3-27b-it.json").read_text())
    siglip = {"hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12, "patch_size": 16,
              "image_size": 224, "num_channels": 3}
    omitted = _sized(cli, tmp_path, {**gemma, "vision_config": {}}, "omitted.json")
    stated = _sized(cli, tmp_path, {**gemma, "vision_config": {"model_type": "siglip_vision_model", **siglip}},
                    "stated.json")
    assert omitted == stated


def test_a_qwen2_vl_vision_config_without_embed_dim_is_the_class_1280(cli, tmp_path):
    """Qwen2VLVisionConfig's embed_dim 1280 and mlp_ratio 4 fill a vision_config that leaves them out; before, the
    Qwen2-VL tower geometry was dropped and the generic tower sized from vision hidden_size (3,584)."""
    vision = QWEN2_VL["vision_config"]
    omitted = _sized(cli, tmp_path, {**QWEN2_VL, "vision_config": _without(vision, "embed_dim", "mlp_ratio")},
                     "omitted.json")
    stated = _sized(cli, tmp_path, QWEN2_VL, "stated.json")
    assert omitted == stated


@pytest.mark.parametrize(("key", "what"), [
    ("v_head_dim", "v_head_dim missing (an MLA projection's width)"),
    ("q_lora_rank", "q_lora_rank missing (an MLA projection's width)"),
    ("n_shared_experts", "n_shared_experts missing (the always-on experts)"),
    ("first_k_dense_replace", "first_k_dense_replace missing (the leading dense layers)"),
    ("moe_intermediate_size", "moe_intermediate_size missing (the routed experts' width)"),
])
def test_deepseek_keys_left_out_are_cannot_predict(cli, tmp_path, key, what):
    """DeepSeek-V2-Lite without one of its MoE / MLA widths: DeepseekV2Config is absent from transformers 4.46.3
    (the checkpoint's own remote code builds it there), so its defaults are not applied. Before: v_head_dim =
    qk_nope_head_dim, q_lora_rank none, no shared experts, no dense layers, experts intermediate_size wide."""
    config = json.loads((DATA / "configs" / "DeepSeek-V2-Lite.json").read_text())
    assert _refused(cli, tmp_path, _without(config, key)) == f"cannot predict DeepseekV2ForCausalLM: {what}"


def test_a_gemma3_text_config_without_model_type_is_gemma3_text(cli, tmp_path):
    """Gemma3Config builds text_config with Gemma3TextConfig whatever it names: google/gemma-3-27b-it's states no
    vocab_size, so a copy without the text model_type still has 262,208 tokens. Before: cannot predict."""
    gemma = json.loads((DATA / "configs" / "gemma-3-27b-it.json").read_text())
    omitted = _sized(cli, tmp_path, {**gemma, "text_config": _without(gemma["text_config"], "model_type")},
                     "omitted.json")
    assert omitted == _sized(cli, tmp_path, gemma, "stated.json")


def test_a_llava_text_config_without_model_type_is_llamas(cli, tmp_path):
    """LlavaConfig builds ``CONFIG_MAPPING[text_config.get("model_type", "llama")]``: LlamaConfig's 11,008 fills a
    missing intermediate_size. Before: no class, and 4 x hidden (16,384)."""
    base = {"architectures": ["LlavaForConditionalGeneration"], "model_type": "llava", "vision_config": CLIP_336,
            "image_seq_length": 576}
    omitted = _sized(cli, tmp_path, {**base, "text_config": _without(LLAMA_TEXT, "model_type", "intermediate_size")},
                     "omitted.json")
    assert omitted == _sized(cli, tmp_path, {**base, "text_config": LLAMA_TEXT}, "stated.json")
