"""Config facts vLLM reads per family and release, through the real CLI (hostile review 12: #1, #7, #8, #12).

- #1: MiniCPM3 carries ``kv_lora_rank`` but vLLM runs MLA only for the model types ``is_deepseek_mla`` lists
  (``vllm.mla_types``); minicpm3.py caches K and V per head at qk_nope + qk_rope (96): 952,320 B a token.
- #7: a text-only class with a stray ``text_config`` is refused by ``get_hf_text_config``, not sized from it.
- #8: OPT / Falcon / GPT-NeoX MLPs are two matrices (``shapes.mlp_matrices``).
- #12: float32 (or no torch_dtype) under auto is float16 through 0.9.0 (gemma2: bfloat16), the platform's preferred
  dtype from 0.9.1: never ``dtype_unsupported`` on a T4 for a non-gemma model.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import run_cli

LLAMA_8B = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
            "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
            "vocab_size": 128256, "max_position_embeddings": 8192, "torch_dtype": "bfloat16",
            "tie_word_embeddings": False}
MINICPM3 = {"architectures": ["MiniCPM3ForCausalLM"], "model_type": "minicpm3", "hidden_size": 2560,
            "num_attention_heads": 40, "num_key_value_heads": 40, "num_hidden_layers": 62, "intermediate_size": 6400,
            "vocab_size": 73448, "max_position_embeddings": 32768, "q_lora_rank": 768, "kv_lora_rank": 256,
            "qk_nope_head_dim": 64, "qk_rope_head_dim": 32, "v_head_dim": 64, "torch_dtype": "bfloat16"}
# facebook/opt-30b's shape (config.json): 48 layers, hidden 7168, ffn_dim 28672, vocab 50272, 2048 positions.
OPT_30B = {"architectures": ["OPTForCausalLM"], "model_type": "opt", "hidden_size": 7168, "num_hidden_layers": 48,
           "num_attention_heads": 56, "ffn_dim": 28672, "vocab_size": 50272, "max_position_embeddings": 2048,
           "torch_dtype": "float16", "word_embed_proj_dim": 7168}


def _write(tmp_path: Path, name: str, config: dict) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(config))
    return str(path)


def _estimate(path: str, gpu: str, version: str, *extra: str) -> dict:
    got = run_cli("estimate", "--model-config", path, "--gpu", gpu, "--vllm-version", version, *extra, "-o", "json")
    assert got.returncode == 0, got.stderr
    return json.loads(got.stdout)


@pytest.mark.parametrize("version", ["0.6.3", "0.10.0", "0.30.0"])
def test_minicpm3_caches_k_and_v_per_head_not_the_latent(tmp_path, version):
    out = _estimate(_write(tmp_path, "minicpm3.json", MINICPM3), "NVIDIA-L4", version, "--max-model-len", "32768")
    # 2 x 40 heads x 96 x 2 B x 62 layers = 952,320 B a token: ~11 GiB of KV holds ~12k tokens, not the ~334k a
    # latent of 256 + 32 would; 32,768 tokens need ~29 GiB, so vLLM refuses the length.
    assert out["outcome"] == "max_len_exceeds_kv", out
    assert out["kv_cache_tokens"] * 952_320 <= out["kv_cache_gib"] * 1024**3 * 1.01
    assert out["needed_kv_gib"] == pytest.approx(32768 * 952_320 / 1024**3, rel=0.01)


@pytest.mark.parametrize(("version", "words"), [
    ("0.6.3", 'AssertionError (assert hasattr(config.text_config, "num_attention_heads"))'),
    ("0.10.0", 'AssertionError (assert hasattr(text_config, "num_attention_heads"))'),
    ("0.30.0", "ValueError: The text_config extracted from the model config does not have `num_attention_heads`"),
])
def test_a_stray_text_config_on_llama_is_refused_as_vllm_refuses_it(tmp_path, version, words):
    stray = {**LLAMA_8B, "text_config": {"hidden_size": 1024, "num_hidden_layers": 2, "num_attention_heads": 8,
                                         "intermediate_size": 2048, "vocab_size": 1000}}
    out = _estimate(_write(tmp_path, "stray.json", stray), "NVIDIA-H100-80GB-HBM3", version,
                    "--max-model-len", "4096")
    assert out["outcome"] == "config_refused", out
    assert words in out["refusal"]


def test_opt_mlp_is_two_matrices(tmp_path):
    out = _estimate(_write(tmp_path, "opt30b.json", OPT_30B), "NVIDIA-H100-80GB-HBM3", "0.30.0")
    # 29.97 B parameters in float16 = 55.8 GiB (three MLP matrices gave 74.3 GiB and no_cache_blocks)
    assert out["weights_gib"] == pytest.approx(55.9, abs=0.3)
    assert out["outcome"] == "fits", out


@pytest.mark.parametrize("version", ["0.5.5", "0.6.3", "0.8.5", "0.9.0", "0.9.2", "0.30.0"])
@pytest.mark.parametrize("stated", [{"torch_dtype": "float32"}, {}])
def test_float32_or_no_dtype_runs_float16_on_a_t4(tmp_path, version, stated):
    small = {**{k: v for k, v in LLAMA_8B.items() if k != "torch_dtype"}, "hidden_size": 2048,
             "num_hidden_layers": 16, "intermediate_size": 8192, **stated}
    out = _estimate(_write(tmp_path, "f32.json", small), "Tesla-T4", version, "--max-model-len", "2048")
    assert out["outcome"] != "dtype_unsupported", out


@pytest.mark.parametrize(("version", "outcome"), [("0.6.3", "dtype_unsupported"), ("0.8.5", "fits")])
def test_float32_gemma2_is_bfloat16_where_the_release_says_so(tmp_path, version, outcome):
    gemma2 = {"architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2", "hidden_size": 2304,
              "num_hidden_layers": 26, "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256,
              "intermediate_size": 9216, "vocab_size": 256000, "max_position_embeddings": 8192,
              "sliding_window": 4096, "torch_dtype": "float32"}
    out = _estimate(_write(tmp_path, "gemma2.json", gemma2), "Tesla-T4", version, "--max-model-len", "2048")
    assert out["outcome"] == outcome, out


def test_a_family_whose_mlp_was_not_read_is_cannot_predict(tmp_path):
    # JAIS builds c_fc and, with SwiGLU, c_fc2 (jais.py@0.19.0): neither count was read, so neither is guessed
    jais = {**{k: v for k, v in LLAMA_8B.items() if k != "model_type"}, "architectures": ["JAISLMHeadModel"],
            "model_type": "jais"}
    got = run_cli("estimate", "--model-config", _write(tmp_path, "jais.json", jais), "--gpu", "NVIDIA-L4",
                  "--vllm-version", "0.19.0")
    assert got.returncode != 0
    assert "cannot predict JAISLMHeadModel: the MLP of jais in vLLM was not read" in got.stderr, got.stderr


@pytest.mark.parametrize(("version", "refused"), [("0.8.5", False), ("0.9.2", True), ("0.30.0", True)])
@pytest.mark.parametrize("dtype", ["float16", "half"])
def test_float16_on_gemma2_is_refused_where_check_valid_dtype_exists(version, refused, dtype):
    got = run_cli("estimate", "--model", "google/gemma-2-9b-it", "--gpu", "NVIDIA-A100-SXM4-80GB", "--vllm-version",
                  version, "--max-model-len", "4096", "--dtype", dtype, "-o", "json")
    assert got.returncode == 0, got.stderr
    out = json.loads(got.stdout)
    words = "ValueError: The model type 'gemma2' does not support float16. Reason: Numerical instability."
    assert (out["outcome"] == "config_refused" and words in out["refusal"]) is refused, out
