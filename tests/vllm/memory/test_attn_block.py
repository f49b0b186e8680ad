"""The KV block size a model without MLA runs with, read per release from vLLM's source (``memory.attn_block``): 16
until 0.34's DEFAULT_BLOCK_SIZE of 64, except where the selected attention backend prefers another (FA4's head-256
kernel on 10.x, the mm-prefix TRITON_FLASHINFER composite, FA4's SM90 fp8 head-512 kernel). Tokens are whole blocks
and one request needs ceil(length / block) blocks, the null block held back from 0.29."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from vllm_remedy.vllm import catalog, gpu_catalog
from vllm_remedy.vllm.catalog import GpuSpec, ModelSpec
from vllm_remedy.vllm.memory import EngineSettings, Estimate, estimate, resolve
from vllm_remedy.vllm.memory.unmodelled import CannotPredict
from vllm_remedy.vllm.outcomes import Outcome
from vllm_remedy.vllm.versions import parse_version

CONFIGS = Path(__file__).resolve().parents[2] / "data" / "configs"
A100, H100, B200, L4, PRO6000 = ("NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3", "NVIDIA-B200", "NVIDIA-L4",
                                 "NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition")
QWEN = catalog.model("Qwen/Qwen2.5-7B-Instruct")
LLAMA = catalog.model("meta-llama/Llama-3.1-8B-Instruct")
GEMMA = catalog.model("gemma-7b")  # head_dim 256, no soft capping, no sliding window
HEAD_512 = dataclasses.replace(GEMMA, name="head-512", head_dim=512)
UNKNOWN_CARD = GpuSpec("unknown-80gb", 80.0, gpu_catalog.UNKNOWN_CAPABILITY, True, 81920)


def gemma3_head_256() -> ModelSpec:
    """Gemma 3 (model_type gemma3: mm-prefix attention) with the 4B / 12B head size."""
    config = json.loads((CONFIGS / "gemma-3-27b-it.json").read_text())
    config["text_config"]["head_dim"] = 256
    return ModelSpec.from_hf_config(config, "gemma-3-head-256")


def run(model: ModelSpec, gpu: str | GpuSpec, version: str, flashinfer: str | None = None,
        **flags: str) -> tuple[int, Estimate]:
    """(block size, estimate); the cache is whole blocks shared out among the groups (the logged tokens are that
    through 0.20; from 0.21 V1 logs max concurrency x max-model-len, kv_cache_utils.py@0.21.0)."""
    typed = {"max-model-len": "4096", **{k.replace("_", "-"): v for k, v in flags.items()}}
    settings = EngineSettings.from_flags(typed, version, {"flashinfer": flashinfer} if flashinfer else None)
    card = gpu if isinstance(gpu, GpuSpec) else catalog.gpu(gpu)
    size, est = resolve(model, card, settings).block_size, estimate(model, card, settings)
    if parse_version(version) < (0, 21, 0):
        assert est.kv_cache_tokens % size == 0
    assert est.gpu_blocks is None or est.gpu_blocks > 0
    return size, est


@pytest.mark.parametrize(("model", "gpu", "version", "flashinfer", "flags", "size"), [
    (QWEN, A100, "0.17.0", None, {}, 16),  # check_and_update_config's 16
    (QWEN, B200, "0.18.0", None, {}, 16),  # the selector from 0.18: FlashInfer [16, 32, 64] takes the default
    (QWEN, H100, "0.33.0", None, {}, 16),
    (QWEN, A100, "0.34.0", None, {}, 64),  # DEFAULT_BLOCK_SIZE 64: FlashAttention's MultipleOf(16) takes it
    (QWEN, B200, "0.34.0", "true", {}, 64),  # FlashInfer's [16, 32, 64]
    (QWEN, L4, "0.34.0", None, {"kv_cache_dtype": "fp8"}, 64),
    (QWEN, PRO6000, "0.34.0", None, {}, 64),
    (QWEN, H100, "0.34.0", None, {"block_size": "16"}, 16),  # a typed size is kept
    (GEMMA, B200, "0.28.0", "false", {}, 16),  # no FA4 head-256 kernel yet
    (GEMMA, B200, "0.29.0", "false", {}, 128),  # FlashInfer missing: FlashAttention, FA4's 128-token pages
    (GEMMA, B200, "0.29.0", "true", {}, 16),  # FlashInfer first on 10.x
    (GEMMA, B200, "0.29.0", None, {}, 128),  # unknown: the larger reading
    (GEMMA, B200, "0.29.0", "false", {"kv_cache_dtype": "fp8"}, 16),  # a quantized cache leaves the FA4 kernel
    (GEMMA, B200, "0.34.0", "false", {}, 128),  # max(64, 128)
    (GEMMA, B200, "0.29.0", "false", {"dtype": "float32"}, 16),  # FlashAttention runs 16-bit models only: Triton
    (GEMMA, H100, "0.29.0", "false", {}, 16),  # FA3 on 9.x
    (GEMMA, PRO6000, "0.31.0", "false", {}, 16),  # 12.x: FlashAttention 2
    (HEAD_512, H100, "0.30.0", None, {"kv_cache_dtype": "fp8"}, 16),
    (HEAD_512, H100, "0.31.0", None, {"kv_cache_dtype": "fp8"}, 64),  # FA4's SM90 fp8 head-512 kernel
    (HEAD_512, H100, "0.31.0", None, {}, 16),
])
def test_the_block_size_each_release_runs_a_model_without_mla_with(model, gpu, version, flashinfer, flags, size):
    assert run(model, gpu, version, flashinfer, **flags)[0] == size


@pytest.mark.parametrize(("version", "flashinfer", "size"), [
    ("0.29.0", "true", 16),  # no composite yet; FlashInfer refuses mm-prefix, FlashAttention needs FA4: Triton
    ("0.30.0", "true", 64),  # TRITON_FLASHINFER's kernel block
    ("0.30.0", "false", 16),  # without FlashInfer: Triton
    ("0.30.0", None, 64),
])
def test_gemma3_mm_prefix_on_blackwell(version, flashinfer, size):
    assert run(gemma3_head_256(), B200, version, flashinfer)[0] == size


def test_an_unknown_card_is_cannot_predict_only_where_the_card_decides():
    assert run(QWEN, UNKNOWN_CARD, "0.34.0")[0] == 64
    assert run(GEMMA, UNKNOWN_CARD, "0.28.0")[0] == 16
    with pytest.raises(CannotPredict, match=r"cannot predict GemmaForCausalLM: the KV block size vLLM 0\.29\.0"):
        run(GEMMA, UNKNOWN_CARD, "0.29.0")


def test_0_34_one_request_needs_whole_64_token_blocks_and_the_null_block():
    def outcome(length: int) -> tuple[int, Outcome]:
        size, est = run(LLAMA, H100, "0.34.0", gpu_memory_utilization="0.4", max_model_len=str(length))
        assert size == 64 and est.gpu_blocks is not None
        return est.gpu_blocks, est.outcome

    blocks, _ = outcome(4096)
    tokens = blocks * 64  # the cache's capacity; one block is vLLM's null block
    assert outcome(tokens - 64) == (blocks, Outcome.FITS)
    assert outcome(tokens - 63) == (blocks, Outcome.MAX_LEN_EXCEEDS_KV)
