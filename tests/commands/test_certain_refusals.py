"""Starts vLLM certainly refuses, predicted as ``config_refused`` in vLLM's words rather than "cannot predict".

The review (hostile 11, #4): ``VLLM_MLA_DISABLE=true`` makes ``ModelConfig.use_mla`` raise (``bool(int("true"))``,
envs.py@0.8.5), as VLLM_USE_V1's text does; the outcome is certain, so it is a refusal by the env (``mla_env``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import run_cli

DS_V2_LITE = {"architectures": ["DeepseekV2ForCausalLM"], "model_type": "deepseek_v2", "hidden_size": 2048,
              "num_attention_heads": 16, "num_hidden_layers": 27, "intermediate_size": 10944,
              "moe_intermediate_size": 1408, "n_routed_experts": 64, "n_shared_experts": 2,
              "num_experts_per_tok": 6, "first_k_dense_replace": 1, "vocab_size": 102400, "num_key_value_heads": 16,
              "kv_lora_rank": 512, "q_lora_rank": None, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
              "v_head_dim": 128, "max_position_embeddings": 163840, "torch_dtype": "bfloat16",
              "rope_scaling": {"type": "yarn", "factor": 40, "original_max_position_embeddings": 4096,
                               "beta_fast": 32, "beta_slow": 1, "mscale": 0.707, "mscale_all_dim": 0.707}}
L40S = ("--gpu", "NVIDIA-L40S")


@pytest.fixture(scope="module")
def ds_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("ds") / "config.json"
    path.write_text(json.dumps(DS_V2_LITE))
    return path


@pytest.mark.parametrize("version", ["0.8.5", "0.30.0"])
def test_mla_disable_text_int_refuses_is_refused_by_the_env(ds_config, version):
    got = run_cli("estimate", "--model-config", str(ds_config), *L40S, "--vllm-version", version,
                  "--vllm-mla-disable", "true", "-o", "json")
    assert got.returncode == 0, got.stderr
    out = json.loads(got.stdout)
    assert out["outcome"] == "config_refused", out
    assert out["refusal"].startswith(f"VLLM_MLA_DISABLE='true': vLLM {version} reads it as bool(int(value))"), out
    assert "invalid literal for int() with base 10: 'true'" in out["refusal"], out


LLAMA = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32,
         "num_hidden_layers": 32, "intermediate_size": 14336, "vocab_size": 128256, "num_key_value_heads": 8,
         "max_position_embeddings": 8192, "torch_dtype": "float16"}
GPTQ_TEXT = {"quant_method": "gptq", "bits": "4", "group_size": 128, "desc_act": False, "sym": True}
AWQ_TEXT = {"quant_method": "awq", "bits": "4", "group_size": 128, "zero_point": True, "version": "gemm"}


def _quantized(tmp_path: Path, qc: dict, version: str):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**LLAMA, "quantization_config": qc}))
    return run_cli("estimate", "--model-config", str(path), *L40S, "--vllm-version", version, "-o", "json")


@pytest.mark.parametrize(("qc", "version", "words"), [
    # gptq.py@0.10.0 l.70: Fraction(32, "4") before the bits check of l.71
    (GPTQ_TEXT, "0.10.0", "TypeError: both arguments should be Rational instances"),
    (GPTQ_TEXT, "0.5.5", "TypeError: both arguments should be Rational instances"),
    # awq.py@0.10.0 l.41: "4" != 4
    (AWQ_TEXT, "0.10.0", "ValueError: Currently, only 4-bit weight quantization is supported for AWQ, but got 4 bits."),
])
def test_bits_as_text_is_refused_by_the_method_config(tmp_path, qc, version, words):
    got = _quantized(tmp_path, qc, version)
    assert got.returncode == 0, got.stderr
    out = json.loads(got.stdout)
    assert out["outcome"] == "config_refused" and out["refusal"] == words, out


def test_bits_as_text_is_declined_by_marlin_so_naming_it_is_a_mismatch(tmp_path):
    # is_gptq_marlin_compatible tests (bits, sym) for membership (gptq_marlin.py@0.20.0): declined, no override;
    # from 0.22.0 auto_gptq takes the name and divides by the text (test_quant_text_bits)
    _quantized(tmp_path, GPTQ_TEXT, "0.20.0")
    got = run_cli("estimate", "--model-config", str(tmp_path / "config.json"), *L40S, "--vllm-version", "0.20.0",
                  "--quantization", "gptq_marlin", "-o", "json")
    assert got.returncode == 0, got.stderr
    out = json.loads(got.stdout)
    assert out["outcome"] == "config_refused", out
    assert out["refusal"].startswith("ValueError: Quantization method specified in the model config (gptq) does not "
                                     "match the quantization method specified in the `quantization` argument "
                                     "(gptq_marlin)"), out
