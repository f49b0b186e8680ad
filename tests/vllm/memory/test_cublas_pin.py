"""torch's default cuBLAS workspace and the profile's hidden-state batch (``cublas_pin``): the sizes that decide
whether the workspace is read to carve the cold compile's freed embedding copy in vLLM 0.27-0.30's profile."""

from __future__ import annotations

import pytest

from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.memory import EngineSettings, resolve
from vllm_remedy.vllm.memory.cublas_pin import carves_table, profile_batch_bytes, workspace_bytes

MIB = 1024 * 1024
QWEN3_8B = catalog.model("Qwen/Qwen3-8B")


@pytest.mark.parametrize("capability", [(7, 5), (8, 0), (8, 6), (8, 9)])
def test_below_hopper_the_default_config_4096_2_16_8(capability):
    """CublasHandlePool.cpp ``parseChosenWorkspaceSize``: 4096 KiB x 2 + 16 KiB x 8."""
    assert workspace_bytes(capability) == 8_519_680


@pytest.mark.parametrize("capability", [(9, 0), (10, 0), (11, 0), (12, 0), (12, 1), None])
def test_hopper_blackwell_and_unknown_cards_32_mib(capability):
    """major 9/10/12 (pytorch#175344), 11 (#189312); an unknown card reads the larger one: more pinned, less KV."""
    assert workspace_bytes(capability) == 32 * MIB


def test_the_batch_is_the_full_hidden_size_under_tp():
    """The vocab-parallel lookup's output is all-reduced: every rank holds mnbt x hidden, TP or not."""
    gpu = catalog.gpu("NVIDIA-GeForce-RTX-4090")
    for tp in ("1", "2"):
        flags = {"max-model-len": "4096", "max-num-batched-tokens": "512", "tensor-parallel-size": tp}
        res = resolve(QWEN3_8B, gpu, EngineSettings.from_flags(flags, "0.29.0"))
        assert profile_batch_bytes(QWEN3_8B, res) == 512 * 4096 * 2
        assert carves_table(QWEN3_8B, res, gpu.capability)
