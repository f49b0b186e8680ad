"""DeepSeek-V2 with compressed-tensors on vLLM 0.7.2: MLA or full K/V, decided from the config groups as vLLM does.

config.py@0.7.2 ``use_mla`` (l.998-1016) keeps MLA for a compressed-tensors checkpoint only when every config group's
``weights.type`` and ``input_activations.type`` are the literal ``"fp8"``; the estimate said "cannot predict" for
every such checkpoint (hostile 11 #4). llm-compressor's FP8 groups say ``"type": "float"``, so on 0.7.2 they run
without MLA (K/V of 192 per head, 16 heads: 10.7x the latent's 576 per layer); 0.7.3 dropped the condition.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import run_cli

GIB = 1 << 30
V2_LITE = {"architectures": ["DeepseekV2ForCausalLM"], "model_type": "deepseek_v2", "hidden_size": 2048,
           "num_attention_heads": 16, "num_key_value_heads": 16, "num_hidden_layers": 27, "intermediate_size": 10944,
           "moe_intermediate_size": 1408, "n_routed_experts": 64, "n_shared_experts": 2, "num_experts_per_tok": 6,
           "first_k_dense_replace": 1, "moe_layer_freq": 1, "kv_lora_rank": 512, "q_lora_rank": None,
           "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128, "vocab_size": 102400,
           "max_position_embeddings": 163840, "torch_dtype": "bfloat16",
           "rope_scaling": {"type": "yarn", "factor": 40, "original_max_position_embeddings": 4096, "beta_fast": 32,
                            "beta_slow": 1, "mscale": 0.707, "mscale_all_dim": 0.707}}
# bytes per token: the latent as 0.7.x's V0 cache engine counts it (576 values rounded up to 640, 256 bytes of bf16:
# ``mla_cache``), K and V per head
LATENT, HEADS = 640 * 2 * 27, 16 * 192 * 2 * 2 * 27


def _ct(kind: str, act: dict | None) -> dict:
    return {"quant_method": "compressed-tensors", "config_groups": {"group_0": {
        "targets": ["Linear"], "weights": {"num_bits": 8 if kind != "int" else 4, "type": kind, "symmetric": True,
                                           "strategy": "channel"}, "input_activations": act}}}


FLOAT = _ct("float", {"num_bits": 8, "type": "float", "symmetric": True, "strategy": "token", "dynamic": True})
FP8 = _ct("fp8", {"num_bits": 8, "type": "fp8", "symmetric": True, "strategy": "token", "dynamic": True})
W4A16 = _ct("int", None)


def _per_token(tmp_path: Path, qc: dict, version: str) -> float:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**V2_LITE, "quantization_config": qc}))
    got = run_cli("estimate", "--model-config", str(path), "--gpu", "NVIDIA-L40S", "--vllm-version", version,
                  "--max-model-len", "8192", "-o", "json")
    assert got.returncode == 0, got.stderr
    doc = json.loads(got.stdout)
    assert doc["outcome"] == "fits", doc
    return doc["kv_cache_gib"] * GIB / doc["kv_cache_tokens"]


@pytest.mark.parametrize(("name", "qc", "per_token"), [("fp8-literal", FP8, LATENT), ("float", FLOAT, HEADS),
                                                        ("w4a16", W4A16, HEADS)])
def test_0_7_2_decides_mla_from_the_config_groups(tmp_path, name, qc, per_token):
    assert _per_token(tmp_path, qc, "0.7.2") == pytest.approx(per_token, rel=0.01), name


def test_0_7_3_runs_mla_whatever_the_groups(tmp_path):
    assert _per_token(tmp_path, FLOAT, "0.7.3") == pytest.approx(LATENT, rel=0.01)
