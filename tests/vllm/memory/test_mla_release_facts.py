"""Three MLA facts read from vLLM's source per release (``mla_block``, ``mla_cache``, ``mla_absorbed``), on
DeepSeek-V2-Lite's config.json (tests/data/configs) and a V3.2-shaped copy of it: the KV block size a release runs
MLA with (tokens are whole blocks), V3.2's 656-byte ``fp8_ds_mla`` cache, and the weights MLA derives from
kv_b_proj / q_proj / o_proj after loading. Where a release's choice was not read the estimate says "cannot predict".
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.catalog import GIB, ModelSpec
from vllm_remedy.vllm.memory import EngineSettings, Estimate, estimate, resolve
from vllm_remedy.vllm.memory.unmodelled import CannotPredict

CONFIG = Path(__file__).resolve().parents[2] / "data" / "configs" / "DeepSeek-V2-Lite.json"
H100, B200, A100, L40S, PRO6000 = ("NVIDIA-H100-80GB-HBM3", "NVIDIA-B200", "NVIDIA-A100-SXM4-80GB", "NVIDIA-L40S",
                                   "NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition")  # the last: capability 12.0
LAYERS, LATENT = 27, 512 + 64  # V2-Lite: 27 layers, kv_lora_rank 512 + qk_rope_head_dim 64
INDEXER = 132  # V3.2's indexer key per token and layer (index_head_dim 128 fp8 + one float32 scale)


def lite(**changes: Any) -> ModelSpec:
    return ModelSpec.from_hf_config({**json.loads(CONFIG.read_text()), **changes}, "DeepSeek-V2-Lite")


def v32(arch: str = "DeepseekV32ForCausalLM") -> ModelSpec:
    return lite(architectures=[arch], index_head_dim=128, index_n_heads=64, index_topk=2048)


def run(model: ModelSpec, gpu: str, version: str, **flags: str) -> Estimate:
    settings = EngineSettings.from_flags({"max-model-len": "8192", **{k.replace("_", "-"): v
                                                                      for k, v in flags.items()}}, version)
    return estimate(model, catalog.gpu(gpu), settings)


def block(model: ModelSpec, gpu: str, version: str, **flags: str) -> int:
    # a length of whole blocks of every size below: from 0.21 the logged count is concurrency x length (``kv_layout``)
    est = run(model, gpu, version, **{"max_model_len": "7680", **flags})
    assert est.kv_cache_tokens % est.gpu_blocks == 0
    return est.kv_cache_tokens // est.gpu_blocks


@pytest.mark.parametrize(("version", "gpu", "flags", "size"), [
    ("0.12.0", A100, {}, 16),  # check_and_update_config forces nothing off Hopper / Blackwell (Triton MLA)
    ("0.12.0", H100, {"block_size": "128"}, 128),  # FlashMLA: a multiple of 64 is kept (0.11 forced 64)
    ("0.14.0", B200, {}, 128),  # CUTLASS MLA on 10.x
    ("0.14.0", B200, {"block_size": "256"}, 256),  # ... a multiple of 128 kept
    ("0.16.0", L40S, {}, 16),
    ("0.16.0", B200, {"block_size": "32"}, 32),  # FlashInfer MLA (qk_nope_head_dim 128) keeps 32
    ("0.19.0", H100, {}, 16),  # the selector: FlashAttention MLA, MultipleOf(16)
    ("0.19.0", H100, {"kv_cache_dtype": "fp8"}, 64),  # FlashAttention MLA takes no fp8 cache: FlashMLA [64]
    ("0.19.0", B200, {}, 32),  # FlashInfer MLA [32, 64]: the smallest, 16 divides neither
    ("0.28.0", PRO6000, {}, 16),  # Triton MLA on 12.x
    ("0.28.0", H100, {"block_size": "48"}, 48),  # a typed size is kept from 0.18
    ("0.34.0", H100, {}, 64),  # DEFAULT_BLOCK_SIZE 64, which MultipleOf(16) accepts
    ("0.34.0", B200, {}, 64),
])
def test_the_block_size_each_release_runs_mla_with(version, gpu, flags, size):
    assert block(lite(), gpu, version, **flags) == size


def test_v32_runs_64_token_blocks_on_hopper_and_is_unknown_on_blackwell_from_0_18():
    assert block(v32(), H100, "0.19.0") == 64
    with pytest.raises(CannotPredict, match="sparse backend"):
        run(v32(), B200, "0.19.0")


def _per_token(model: ModelSpec, gpu: str, version: str, **flags: str) -> float:
    est = run(model, gpu, version, **flags)
    return est.kv_cache_gib * GIB / est.kv_cache_tokens / LAYERS


@pytest.mark.parametrize(("version", "kv", "latent"), [
    ("0.11.0", "auto", 656),  # DeepseekV32ForCausalLM.verify_and_update_config: auto and fp8* become fp8_ds_mla
    ("0.11.0", "bfloat16", LATENT * 2),  # bfloat16 becomes auto: the 16-bit latent
    ("0.14.0", "auto", LATENT * 2),  # from 0.12 only fp8* converts
    ("0.14.0", "fp8", 656),
    ("0.17.0", "fp8_e4m3", 656),
    ("0.19.0", "fp8", 656),  # FlashMLA sparse on Hopper converts fp8
    ("0.27.0", "fp8", 656),
    ("0.19.0", "auto", LATENT * 2),
])
def test_v32_caches_656_bytes_a_token_as_fp8_ds_mla(version, kv, latent):
    assert _per_token(v32(), H100, version, kv_cache_dtype=kv) == pytest.approx(latent + INDEXER, rel=0.002)


@pytest.mark.parametrize(("model", "version", "kv", "why"), [
    (v32("DeepseekV3ForCausalLM"), "0.14.0", "fp8", "no DeepseekV32ForCausalLM config class"),
    (v32(), "0.19.0", "fp8_e4m3", "no sparse MLA backend lists it"),
    (v32(), "0.28.0", "auto", "sized by its backend from 0.28.0"),
    (lite(), "0.14.0", "fp8_ds_mla", "without index_topk"),
])
def test_an_unread_v32_cache_is_cannot_predict(model, version, kv, why):
    with pytest.raises(CannotPredict, match=why):
        run(model, H100, version, kv_cache_dtype=kv)


def _absorbed(model: ModelSpec, gpu: str, version: str, quantization: str | None = None, tp: int = 1) -> int:
    from vllm_remedy.vllm.memory.weights import mla_absorbed_bytes  # here: the module's other tests run without it

    settings = EngineSettings(version=version, quantization=quantization, tp=tp)
    got, why = mla_absorbed_bytes(model, resolve(model, catalog.gpu(gpu), settings), quantization,
                                  catalog.gpu(gpu).capability)
    assert why is None, why
    return got


def test_absorbed_weights_alias_kv_b_proj_from_0_8_unless_it_is_quantized():
    assert _absorbed(lite(), H100, "0.8.5") == 0
    assert _absorbed(lite(), H100, "0.30.0") == 0
    # online fp8: W_UV / W_UK_T keep a bf16 dequantized kv_b_proj: 512 x 16 heads x (128 + 128) x 2 B a layer
    assert _absorbed(lite(), H100, "0.19.0", "fp8") == LAYERS * 512 * 16 * 256 * 2  # 0.105 GiB
    assert _absorbed(lite(), H100, "0.19.0", "fp8", tp=2) == LAYERS * 512 * 8 * 256 * 2


def test_0_7_keeps_absorbed_q_and_o_matrices_beside_the_weights():
    # W_QR (2048 x 16 x 64), W_Q_UK (2048 x 16 x 512) and W_UV_O (16 x 512 x 2048), bf16: 1.79 GiB on V2-Lite
    per_layer = (2048 * 16 * 64 + 2048 * 16 * 512 + 16 * 512 * 2048) * 2
    assert _absorbed(lite(), H100, "0.7.3") == LAYERS * per_layer
    est_073, est_085 = run(lite(), H100, "0.7.3"), run(lite(), H100, "0.8.5")
    assert est_073.weights_gib - est_085.weights_gib == pytest.approx(LAYERS * per_layer / GIB, abs=0.01)


def test_0_7_requantizes_the_absorbed_matrices_of_an_fp8_block_checkpoint():
    fp8 = lite(quantization_config={"quant_method": "fp8", "weight_block_size": [128, 128],
                                    "activation_scheme": "dynamic"})
    kv_b = 512 * 16 * 256 * 2  # the dequantized bf16 kv_b_proj the W_UK / W_UV views keep
    w_qr = 2048 * 16 * 64 * 2
    q_uk = 2048 * 8192 + (2048 // 128) * (8192 // 128) * 4  # fp8 values + one float32 scale per 128 x 128 block
    uv_o = 8192 * 2048 + (8192 // 128) * (2048 // 128) * 4
    assert _absorbed(fp8, H100, "0.7.3") == LAYERS * (kv_b + w_qr + q_uk + uv_o)


def test_unread_absorbed_weights_are_cannot_predict():
    with pytest.raises(CannotPredict, match="Marlin"):  # per-tensor fp8 below capability 8.9
        run(lite(), A100, "0.7.3", quantization="fp8")
    skipped = lite(quantization_config={"quant_method": "fp8", "ignored_layers": ["model.layers.0.self_attn.kv_b_proj"],
                                        "activation_scheme": "dynamic"})
    # the exclusion is judged first (quant_exclusions: DeepSeek's vLLM layer names are not read), naming the module
    with pytest.raises(CannotPredict, match=r"excludes modules \['model.layers.0.self_attn.kv_b_proj'\]"):
        run(skipped, H100, "0.19.0")


def test_0_7_v0_counts_the_latent_aligned_to_256_bytes():
    # worker/cache_engine.py@0.7.3 get_cache_block_size: 576 values rounded up to 128 (256 bytes of bf16) = 640
    assert _per_token(lite(), H100, "0.7.3") == pytest.approx(640 * 2, rel=0.002)
    assert _per_token(lite(), H100, "0.8.5") == pytest.approx(LATENT * 2, rel=0.002)  # no alignment from 0.8.0
    with pytest.raises(CannotPredict, match="allocates 768 bytes a token and layer but counts 640"):
        run(lite(), H100, "0.7.3", kv_cache_dtype="fp8")
