"""The cold compile's embedding copy counted twice by 0.27+'s ``memory_profiling`` (``terms.pinned_compile_gib``).
The mechanism is vLLM's and torch's source; the condition (``cublas_pin.carves_table``: torch's cuBLAS workspace is
larger than the profile's hidden-state batch) was chosen post hoc on the eight cold 0.27-0.30 logs that show it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.catalog import GIB
from vllm_remedy.vllm.memory import EngineSettings, estimate, resolve
from vllm_remedy.vllm.memory.calibration import estimate_case
from vllm_remedy.vllm.memory.non_torch import non_torch_gib
from vllm_remedy.vllm.memory.terms import pinned_compile_gib

QWEN3_8B = catalog.model("Qwen/Qwen3-8B")
RTX5090 = catalog.gpu("NVIDIA-GeForce-RTX-5090")
RTX4090 = catalog.gpu("NVIDIA-GeForce-RTX-4090")
CASES = Path(__file__).resolve().parents[2] / "data" / "calibration"
TABLE = 151936 * 4096 * 2 / GIB  # Qwen3-8B's embedding table (vocab already a multiple of 64), bf16: 1.16 GiB


def pinned(version: str, capability: tuple[int, int] | None, **inputs: str) -> float:
    settings = EngineSettings.from_flags({"max-model-len": "8192"}, version, inputs)
    return pinned_compile_gib(QWEN3_8B, resolve(QWEN3_8B, RTX5090, settings), capability)


def test_a_cold_start_on_capability_12_at_the_default_batch_pays_the_table_again_from_0_27():
    """mnbt 2048 (``vllm serve`` on a card under 70 GiB): 2048 x 4096 x 2 B = 16 MiB, under the 32 MiB workspace."""
    assert pinned("0.28.0", (12, 0)) == pytest.approx(TABLE)
    assert pinned("0.26.0", (12, 0)) == 0.0  # weights + peak increase + non-torch increase: counted once


@pytest.mark.parametrize("capability", [(12, 0), None])
def test_from_0_31_the_profile_split_limit_returns_the_copy(capability):
    """0.31.0 profiles under max_split_size_mb=20 (v1/worker/gpu_worker.py@0.31.0-0.34.0): the freed copy is never
    carved, so ``empty_cache`` returns its segment; 0.28.0-0.30.0 profile without the limit."""
    assert pinned("0.30.0", capability) == pytest.approx(TABLE)
    for version in ("0.31.0", "0.32.0", "0.34.0"):
        assert pinned(version, capability) == 0.0


@pytest.mark.parametrize("capability", [(8, 9), (8, 0), (7, 5)])
def test_older_cards_do_not_at_the_default_batch(capability):
    """16 MiB of hidden states is not under their 8.125 MiB cuBLAS workspace."""
    assert pinned("0.28.0", capability) == 0.0


def pinned_at(version: str, gpu: catalog.GpuSpec, mnbt: int) -> float:
    settings = EngineSettings.from_flags({"max-model-len": "4096", "max-num-batched-tokens": str(mnbt)}, version)
    return pinned_compile_gib(QWEN3_8B, resolve(QWEN3_8B, gpu, settings), gpu.capability)


def test_a_small_batch_on_capability_8_9_pays_it():
    """The 48 GB RTX 4090 0.29.0 starts (yuanjuju/vllm-lab): at mnbt 512 (4 MiB of hidden states, under the 8.125 MiB
    workspace) 16.54 GiB consumed, at mnbt 4096 (32 MiB) 15.38, the table apart; post hoc, from those logs."""
    gpu = RTX4090.with_total(47.37)
    assert pinned_at("0.29.0", gpu, 512) == pytest.approx(TABLE)
    assert pinned_at("0.29.0", gpu, 4096) == 0.0


def test_the_batch_must_be_below_the_workspace():
    """4096 (hidden) x 2 B x 1040 tokens is exactly torch's 8,519,680 B default workspace; 32 MiB at 4096 tokens on
    capability 12. Equal is not below: the workspace fits a freed block of the batch's size."""
    assert pinned_at("0.29.0", RTX4090, 1039) == pytest.approx(TABLE)
    assert pinned_at("0.29.0", RTX4090, 1040) == 0.0
    assert pinned_at("0.29.0", RTX5090, 4095) == pytest.approx(TABLE)
    assert pinned_at("0.29.0", RTX5090, 4096) == 0.0


def test_a_large_batch_on_capability_12_does_not():
    """RTX PRO 6000 (12.0) starts of 0.27.1 at ``vllm serve``'s 8192 tokens (96 GB card): 64-80 MiB of hidden states,
    over the 32 MiB workspace."""
    assert pinned_at("0.28.0", RTX5090, 8192) == 0.0


def test_the_mnbt_512_case_is_charged_the_table_as_non_torch_memory():
    case = yaml.safe_load((CASES / "rtx4090-48gb-v0.29.0-qwen3-8b-4k-u0.75-mnbt512.yaml").read_text())
    companion = yaml.safe_load((CASES / "rtx4090-48gb-v0.29.0-qwen3-8b-4k-u0.75-seqs8.yaml").read_text())
    assert estimate_case(case).non_torch_gib - estimate_case(companion).non_torch_gib == pytest.approx(TABLE, abs=0.01)


def test_an_unknown_card_pays_it_the_safe_side():
    assert pinned("0.28.0", None) == pytest.approx(TABLE)


def test_no_cold_compile_no_copy():
    assert pinned("0.28.0", (12, 0), **{"compile-cache-warm": "true"}) == 0.0
    settings = EngineSettings.from_flags({"max-model-len": "8192", "enforce-eager": "true"}, "0.28.0")
    assert pinned_compile_gib(QWEN3_8B, resolve(QWEN3_8B, RTX5090, settings), (12, 0)) == 0.0


def test_it_is_charged_as_non_torch_memory():
    settings = EngineSettings.from_flags({"max-model-len": "8192"}, "0.28.0")
    for gpu, extra in ((RTX5090, TABLE), (RTX4090, 0.0)):  # capability 12.0 and 8.9
        res = resolve(QWEN3_8B, gpu, settings)
        assert estimate(QWEN3_8B, gpu, settings).non_torch_gib == pytest.approx(non_torch_gib(gpu, res) + extra)
