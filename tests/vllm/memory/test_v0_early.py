"""V0 releases 0.5.5-0.6.4, read from their wheels: the KV budget's baseline and the profile all-reduce.

0.5.5-0.6.3 charge the free-memory drop since ``init_device`` (after the CUDA context, before the distributed setup),
0.6.4 everything in use on the device; the row-parallel all-reduce is in place for a profile-sized tensor before 0.6.5.
"""

from __future__ import annotations

import pytest

from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.catalog import GpuSpec
from vllm_remedy.vllm.memory import non_torch
from vllm_remedy.vllm.memory.core import estimate
from vllm_remedy.vllm.memory.settings import EngineSettings
from vllm_remedy.vllm.memory.v0_forward import v0_forward_values_per_token
from vllm_remedy.vllm.version_labels import OLDEST_MODELLED
from vllm_remedy.vllm.versions import rules

QWEN2_72B = catalog.model("Qwen/Qwen2-72B-Instruct")


@pytest.mark.parametrize(("version", "budget"), [("0.5.5", "increase"), ("0.6.0", "increase"),
                                                 ("0.6.3", "increase"), ("0.6.4", "absolute"),
                                                 ("0.6.4.post1", "absolute"), ("0.6.5", "increase")])
def test_v0_budget_per_release(version, budget):
    """worker.py@0.5.5-0.6.3: ``init_gpu_memory - free``; @0.6.4: allocated peak + all in use; @0.6.5: increase."""
    assert rules(version).budget == budget


def test_0_5_5_is_read_and_older_releases_are_extrapolated_from_it():
    assert OLDEST_MODELLED == (0, 5, 5)
    assert rules("0.5.5").label == "0.5.5" and not rules("0.5.5").extrapolated
    assert rules("0.5.4").label == "0.5.4 (rules: extrapolated from 0.5.5)"


def test_profile_all_reduce_row_only_from_0_6_5():
    """In place before 0.6.5 (torch.distributed / PyNccl; custom all-reduce only below 8 MiB), out of place after."""
    inter, hidden = QWEN2_72B.intermediate_size / 2, QWEN2_72B.hidden_size
    assert v0_forward_values_per_token(QWEN2_72B, 2, (0, 5, 5)) == 3 * inter + 4 * hidden
    assert v0_forward_values_per_token(QWEN2_72B, 2, (0, 6, 4)) == 3 * inter + 4 * hidden
    assert v0_forward_values_per_token(QWEN2_72B, 2, (0, 6, 5)) == 3 * inter + 5 * hidden


def _a100_pcie() -> GpuSpec:
    return catalog.gpu("NVIDIA-A100-80GB-PCIe")


def test_0_5_5_charges_neither_the_cuda_context_nor_nccl_init_as_absolute_budgets_do():
    """0.5.5's non-torch charge is V0's "increase" figure (+ v0_comm's P2P buffers), not 0.6.4's context + NCCL."""
    flags = {"tensor-parallel-size": "2", "max-model-len": "13312", "max-num-seqs": "8", "enforce-eager": "true",
             "gpu-memory-utilization": "0.95"}
    gpu = _a100_pcie()
    old = estimate(QWEN2_72B, gpu, EngineSettings.from_flags(flags, "0.5.5"))
    absolute = estimate(QWEN2_72B, gpu, EngineSettings.from_flags(flags, "0.6.4"))
    assert old.non_torch_gib == pytest.approx(non_torch.V0_NON_TORCH_TP2_GIB + 0.146, abs=0.01)
    assert absolute.non_torch_gib > old.non_torch_gib + non_torch.context_gib(gpu, 2) - 0.01
    assert old.kv_cache_tokens > absolute.kv_cache_tokens
