"""ModelOpt checkpoints against the card's capability and the KV scheme's place, through the real CLI
(``--model-config``, no Hub).

vLLM refuses a ModelOpt class below its ``get_min_capability`` while it builds the config
(``_get_quantization_config``, config/vllm.py@0.30.0 l.832-842): "modelopt" 89 through 0.26.0, 80 from 0.27.0;
"modelopt_fp4", which the overrides pick for an NVFP4 algorithm, 80 through 0.13.0 and 75 from 0.14.0
(``modelopt_class``). Before, every card was sized as fitting (an A100 at 0.25.0, a T4 at 0.30.0).

``resolve_kv_cache_dtype_string`` reads the KV scheme from the top-level config's ``quantization_config`` only
(utils/torch_utils.py@0.14.0 l.310-314, @0.30.0 l.516-520, @0.34.0 l.527-531), while the weights' section falls back
to ``text_config`` (model_arch_config_convertor.py@0.30.0 l.302-309). Before, a section kept in ``text_config`` only
turned ``auto`` into fp8 (twice the tokens, a wrong "fits")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import run_cli

CONFIGS = Path(__file__).resolve().parents[1] / "data" / "configs"
LLAMA = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336,
         "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256,
         "max_position_embeddings": 131072, "rms_norm_eps": 1e-05, "rope_theta": 500000.0, "torch_dtype": "bfloat16"}
FP8 = {"quant_method": "modelopt", "quant_algo": "FP8", "kv_cache_quant_algo": "FP8"}
NVFP4 = {"quant_method": "modelopt", "quant_algo": "NVFP4"}


def estimate(tmp_path: Path, config: dict, gpu: str, version: str, length: str = "8192") -> dict:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    got = run_cli("estimate", "--model-config", str(path), "--gpu", gpu, "--max-model-len", length,
                  "--vllm-version", version, "-o", "json")
    assert got.returncode in (0, 1), got.stderr
    return json.loads(got.stdout)


def _refused(method: str, least: int, cap: int) -> str:
    return (f"ValueError: The quantization method {method} is not supported for the current GPU. Minimum "
            f"capability: {least}. Current capability: {cap}.")


@pytest.mark.parametrize(("quant", "gpu", "version", "said"), [
    (FP8, "NVIDIA-A100-SXM4-80GB", "0.14.0", _refused("modelopt", 89, 80)),
    (FP8, "NVIDIA-A100-SXM4-80GB", "0.25.0", _refused("modelopt", 89, 80)),
    (FP8, "NVIDIA-A10G", "0.26.0", _refused("modelopt", 89, 86)),
    (FP8, "Tesla-T4", "0.30.0", _refused("modelopt", 80, 75)),
    (FP8, "Tesla-T4", "0.10.1", _refused("modelopt", 89, 75)),
    (NVFP4, "Tesla-T4", "0.13.0", _refused("modelopt_fp4", 80, 75)),
    (NVFP4, "Tesla-V100-SXM2-32GB", "0.34.0", _refused("modelopt_fp4", 75, 70)),
])
def test_a_card_below_the_modelopt_class_is_refused_in_vllms_words(tmp_path, quant, gpu, version, said):
    got = estimate(tmp_path, {**LLAMA, "quantization_config": quant}, gpu, version)
    assert (got["outcome"], got["refusal"]) == ("config_refused", said), got


@pytest.mark.parametrize(("quant", "gpu", "version"), [
    (FP8, "NVIDIA-A100-SXM4-80GB", "0.27.0"),  # 80 from 0.27.0
    (FP8, "NVIDIA-L4", "0.25.0"),
    (NVFP4, "Tesla-T4", "0.30.0"),  # the override makes it modelopt_fp4 (75), not modelopt (80)
    (NVFP4, "NVIDIA-A100-SXM4-80GB", "0.13.0"),
])
def test_a_card_at_the_class_floor_is_sized(tmp_path, quant, gpu, version):
    got = estimate(tmp_path, {**LLAMA, "quantization_config": quant}, gpu, version)
    assert got["outcome"] == "fits", got["outcome"]


def _gemma3(text_quant: dict | None = None, top_quant: dict | None = None) -> dict:
    config = json.loads((CONFIGS / "gemma-3-27b-it.json").read_text())
    if text_quant is not None:
        config["text_config"] = {**config["text_config"], "quantization_config": text_quant}
    return config if top_quant is None else {**config, "quantization_config": top_quant}


@pytest.mark.parametrize("version", ["0.14.0", "0.30.0", "0.34.0"])
def test_a_kv_scheme_kept_in_text_config_leaves_auto_16_bit(tmp_path, version):
    """The weights read the text_config section (FP8), the KV cache does not: 102,300 tokens at 0.30.0, as without
    kv_cache_quant_algo; on main 204,613 (fp8) and "fits"."""
    kept = estimate(tmp_path, _gemma3(text_quant=FP8), "NVIDIA-L40S", version, "131072")
    plain = estimate(tmp_path, _gemma3(text_quant={"quant_method": "modelopt", "quant_algo": "FP8"}), "NVIDIA-L40S",
                     version, "131072")
    assert kept["outcome"] == plain["outcome"], (kept["outcome"], plain["outcome"])
    assert kept["kv_cache_tokens"] == plain["kv_cache_tokens"] and not kept.get("kv_cache_dtype_note"), kept
    assert version != "0.30.0" or kept["outcome"] == "max_len_exceeds_kv", kept
    top = estimate(tmp_path, _gemma3(top_quant=FP8), "NVIDIA-L40S", version, "131072")
    assert top["kv_cache_tokens"] > 1.9 * kept["kv_cache_tokens"] and "fp8_e4m3" in top["kv_cache_dtype_note"], top


def test_the_top_level_section_wins_over_text_configs(tmp_path):
    """vLLM reads text_config's section only when the top level has none: here the top level's ModelOpt FP8 (89)
    is judged on an A100 at 0.25.0, not text_config's fp8 (75), which main sized as fitting."""
    got = estimate(tmp_path, _gemma3(text_quant={"quant_method": "fp8"}, top_quant=FP8), "NVIDIA-A100-SXM4-80GB",
                   "0.25.0")
    assert (got["outcome"], got["refusal"]) == ("config_refused", _refused("modelopt", 89, 80)), got


def test_before_0_10_2_a_text_config_section_is_not_read(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(_gemma3(text_quant=FP8)))
    got = run_cli("estimate", "--model-config", str(path), "--gpu", "NVIDIA-L40S", "--max-model-len", "8192",
                  "--vllm-version", "0.10.1")
    assert got.returncode == 2 and "before 0.10.2 read quantization_config from the top-level" in got.stderr, got
