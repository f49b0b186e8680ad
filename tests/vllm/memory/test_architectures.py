"""Real config.json files (tests/data/configs, sources in SOURCES.md) sized as vLLM sizes them, checked against
the figures public vLLM logs printed for the same models."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from vllm_remedy.errors import UserError
from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.catalog import GIB, ModelSpec
from vllm_remedy.vllm.memory import EngineSettings, Estimate, estimate, resolve
from vllm_remedy.vllm.memory.terms import kv_layout
from vllm_remedy.vllm.outcomes import Outcome

CONFIGS = Path(__file__).resolve().parents[2] / "data" / "configs"
H100 = "NVIDIA-H100-80GB-HBM3"


def config(name: str) -> dict[str, Any]:
    return json.loads((CONFIGS / f"{name}.json").read_text())


def spec(name: str) -> ModelSpec:
    return ModelSpec.from_hf_config(config(name), name)


def run(model: ModelSpec, gpu: str = H100, version: str = "0.11.0", **flags: str) -> Estimate:
    settings = EngineSettings.from_flags({k.replace("_", "-"): v for k, v in flags.items()}, version)
    return estimate(model, catalog.gpu(gpu), settings)


def test_gpt_oss_20b_packs_only_the_experts_and_keeps_a_window_in_half_the_layers():
    model = spec("gpt-oss-20b")
    assert (model.quantization, model.quantized_scope, model.weight_bits) == ("mxfp4", "experts", 4)
    assert (model.num_layers, model.sliding_layers, model.sliding_window) == (24, 12, 128)
    assert model.num_experts == 32 and model.expert_params_b == pytest.approx(19.11, abs=0.01)  # every expert
    est = run(model, "NVIDIA-L4")
    # Sized as bf16 the weights were 39.04 GiB: oom_loading_weights on this 24 GB card.
    assert 13.0 < est.weights_gib < 14.5
    assert est.outcome is Outcome.FITS and est.max_model_len == 131072
    # Two groups of 12 layers (full, sliding): a block is a 16-token page in 12 layers of each group.
    page = 16 * 8 * (64 + 64) * 2
    assert est.gpu_blocks == int(est.kv_cache_gib * GIB // (page * 12))
    assert est.kv_cache_tokens == est.gpu_blocks // 2 * 16
    # One 131,072-token request: every block for the full group, the window and one chunk for the sliding one.
    mnbt = resolve(model, catalog.gpu("NVIDIA-L4"), EngineSettings(version="0.11.0")).mnbt
    per_request = 131072 // 16 + math.ceil((128 - 1 + mnbt) / 16) + 1
    assert est.max_concurrency == pytest.approx(est.gpu_blocks / per_request)
    assert est.gpu_blocks < 2 * 131072 // 16  # sized as full attention in every layer it would not start


def test_hybrid_manager_arrived_in_0_9_1_before_it_sliding_layers_were_sized_as_full():
    model = spec("gpt-oss-20b")  # kv_layout.HYBRID_KV_SINCE: HybridKVCacheCoordinator first in 0.9.1's wheel
    res = resolve(model, catalog.gpu(H100), EngineSettings(version="0.9.0"))
    assert kv_layout(model, res).windows == (None,)
    res = resolve(model, catalog.gpu(H100), EngineSettings(version="0.9.1"))
    assert kv_layout(model, res).windows == (None, 128)


def test_gpt_oss_120b_on_one_h100_matches_vllm_27508():
    model = spec("gpt-oss-120b")
    assert (model.num_layers, model.sliding_layers, model.num_experts) == (36, 18, 128)
    # Logged "Model loading took": 65.97 GiB (0.10.1, Marlin, vllm#23278), 64.38 GiB (0.14.1, Triton, vllm#33155).
    est = run(model)
    assert 64.38 <= est.weights_gib <= 65.97 * 1.01
    # vllm#27508 (0.11.0): the defaults end in "No available memory for the cache blocks" ...
    assert est.outcome is Outcome.NO_CACHE_BLOCKS
    # ... and --gpu-memory-utilization 0.95 --max-num-batched-tokens 1024 logged "Available KV cache memory:
    # 1.71 GiB" and then refused the 131,072-token max-model-len.
    est = run(model, gpu_memory_utilization="0.95", max_num_batched_tokens="1024")
    assert est.outcome is Outcome.MAX_LEN_EXCEEDS_KV
    assert 1.71 - 0.3 <= est.kv_cache_gib <= 1.71
    assert run(model, tensor_parallel_size="2").fits


def test_gemma_3_27b_reads_transformers_defaults_and_groups_five_local_layers_per_global():
    model = spec("gemma-3-27b-it")
    # The published config names neither: Gemma3TextConfig fills them in, and vLLM reads the filled config.
    assert (model.vocab_size, model.max_model_len, model.tie_word_embeddings) == (262208, 131072, True)
    assert (model.num_layers, model.sliding_layers, model.sliding_window) == (62, 52, 1024)
    assert 0.40 < model.vision_params_b < 0.45  # SigLIP tower (27 layers) and projector, kept bf16
    assert (model.image_tokens, model.image_patches) == (256, 64 * 64)
    assert 27.0 < model.params_b < 27.6
    est = run(model, version="0.19.0", max_model_len="32768", gpu_memory_utilization="0.95")
    assert est.fits and 50.5 < est.weights_gib < 52.0
    # 10 global layers set the group size: 1 full group and 6 sliding groups (52 layers padded to 60).
    page = 16 * 16 * (128 + 128) * 2
    assert est.gpu_blocks == int(est.kv_cache_gib * GIB // (page * 10))
    assert est.kv_cache_tokens == est.gpu_blocks // 7 * 16
    mnbt = resolve(model, catalog.gpu(H100), EngineSettings(version="0.19.0")).mnbt
    per_request = 32768 // 16 + 6 * (math.ceil(min(1024 - 1 + mnbt, 32768) / 16) + 1)
    assert est.max_concurrency == pytest.approx(est.gpu_blocks / per_request)


def test_deepseek_v2_lite_keeps_one_latent_head_and_counts_every_expert():
    model = spec("DeepSeek-V2-Lite")
    assert model.is_mla and (model.kv_lora_rank, model.qk_rope_head_dim) == (512, 64)
    # 26 routed layers (the first is dense) x 64 experts; 15.7 B parameters in all, as DeepSeek states.
    assert model.expert_params_b == pytest.approx(26 * 64 * 3 * 2048 * 1408 / 1e9)
    assert model.params_b == pytest.approx(15.7, abs=0.05)
    est = run(model, version="0.19.0", max_model_len="32768")
    # "Loading model weights took 29.3010 GB" (vllm#4650, DeepSeek-V2-Lite on 0.5.0.post1).
    assert est.weights_gib == pytest.approx(29.30, abs=0.3)
    per_token = 27 * (512 + 64) * 2  # one 576-wide latent per token and layer, bf16
    # 0.19.0 on an H100 with a 16-bit cache selects FlashAttention MLA, MultipleOf(16): blocks of 16 (``mla_block``)
    assert est.gpu_blocks == int(est.kv_cache_gib * GIB // (per_token * 16)) and est.kv_cache_tokens % 16 == 0
    # vllm#15871: "To serve at least one request with the models's max seq len (32768), (0.95 GiB KV cache is needed".
    res = resolve(model, catalog.gpu(H100), EngineSettings(version="0.8.3", max_model_len=32768))
    layout = kv_layout(model, res)
    assert layout.blocks_for(32768, res.mnbt) * layout.block_bytes / GIB == pytest.approx(0.95, abs=0.005)


def test_qwen3_30b_a3b_from_its_config_matches_the_llm_d_log():
    model = spec("Qwen3-30B-A3B")
    assert model.num_experts == 128 and model.params_b == pytest.approx(30.5, abs=0.1)
    # llm-d-planner 0.19.0 log (tests/data/calibration/h100-v0.19.0-qwen3-30b-a3b.yaml): weights 56.88 GiB,
    # 168,288 KV tokens, 20.54x at 8,192.
    est = run(model, version="0.19.0", max_model_len="8192", gpu_memory_utilization="0.95")
    assert est.weights_gib == pytest.approx(56.88, abs=0.25)
    assert 0.97 * 168288 <= est.kv_cache_tokens <= 168288
    assert est.max_concurrency == pytest.approx(20.54, rel=0.03)


@pytest.mark.parametrize(
    ("name", "change", "message"),
    [
        ("gpt-oss-20b", {"layer_types": ["linear_attention", "full_attention"] * 12},
         "cannot predict GptOssForCausalLM: layer_types linear_attention have no per-token KV model"),
        ("gpt-oss-20b", {"quantization_config": {"quant_method": "gguf"}},
         "cannot predict GptOssForCausalLM: quantization_config.quant_method 'gguf' is not modelled"),
        ("Qwen3-30B-A3B", {"quantization_config": {"quant_method": "gptq"}},
         "cannot predict Qwen3MoeForCausalLM: quantization_config (gptq) states no bits / w_bit"),
        ("Qwen3-30B-A3B", {"mamba_d_state": 128},
         "cannot predict Qwen3MoeForCausalLM: mamba_d_state marks layers whose cache is not per-token K/V; "
         "not modelled"),
        ("DeepSeek-V2-Lite", {"qk_rope_head_dim": None},
         "cannot predict DeepseekV2ForCausalLM: kv_lora_rank is set (MLA) but qk_rope_head_dim is missing"),
        # A Gemma 3 vision_config without sizes takes SiglipVisionConfig's (Gemma3Config builds it with that class);
        # one built with a class the project holds no defaults for is still refused:
        ("gemma-3-27b-it", {"architectures": ["LlavaForConditionalGeneration"], "model_type": "llava",
                            "vision_config": {"model_type": "pixtral", "patch_size": 14}},
         "cannot predict LlavaForConditionalGeneration: vision_config states no hidden_size / embed_dim or "
         "num_hidden_layers / depth"),
    ],
)
def test_what_cannot_be_sized_says_so_instead_of_a_number(name, change, message):
    broken = {**config(name), **change}
    with pytest.raises(UserError) as err:
        ModelSpec.from_hf_config(broken, name)
    assert str(err.value) == message


def test_cli_refuses_an_unsized_architecture_in_one_line(tmp_path, cli):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**config("gpt-oss-20b"), "layer_types": ["sliding_attention", "mamba"] * 12}))
    got = cli("estimate", "--model-config", str(path), "--gpu", "NVIDIA-L4")
    assert got.returncode == 2 and got.stdout == ""
    assert got.stderr == "vllm-remedy: error: cannot predict GptOssForCausalLM: layer_types mamba have no per-token " \
                         "KV model\n"


def test_cli_sizes_gpt_oss_20b_from_its_config(cli):
    got = cli("estimate", "--model-config", str(CONFIGS / "gpt-oss-20b.json"), "--gpu", "NVIDIA-L4",
              "--vllm-version", "0.11.0", "-o", "json")
    assert got.returncode == 0, got.stderr
    data = json.loads(got.stdout)
    assert data["outcome"] == "fits" and data["weights_gib"] < 14.5 and data["max_model_len"] == 131072


LLAMA_8B = {"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "num_hidden_layers": 32,
            "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256,
            "max_position_embeddings": 8192, "torch_dtype": "bfloat16"}


@pytest.mark.parametrize(
    ("quantization_config", "bits", "low", "high"),
    [
        (None, 16, 14.9, 15.1),  # logged 14.99 GiB (llm-d 0.19.0, tests/data/calibration)
        ({"quant_method": "fp8", "activation_scheme": "dynamic"}, 8, 8.4, 8.7),
        ({"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True}, 4, 5.3, 5.7),
        ({"quant_method": "gptq", "bits": 8, "group_size": 128}, 8, 8.4, 8.7),
        ({"quant_method": "compressed-tensors",
          "config_groups": {"group_0": {"weights": {"num_bits": 4, "type": "int"}}}}, 4, 5.3, 5.7),
        ({"load_in_4bit": True, "bnb_4bit_quant_type": "nf4"}, 4, 5.3, 5.7),
    ],
)
def test_quantization_config_sets_the_width_of_the_linear_layers(quantization_config, bits, low, high):
    raw = dict(LLAMA_8B, **({"quantization_config": quantization_config} if quantization_config else {}))
    model = ModelSpec.from_hf_config(raw, "llama-8b")
    assert model.weight_bits == bits
    # Embeddings and LM head stay bf16 (2.0 GiB of them); the rest is packed.
    assert low <= run(model, version="0.19.0").weights_gib <= high
