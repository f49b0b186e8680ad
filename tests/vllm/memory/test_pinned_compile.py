"""The cold compile's embedding copy counted twice by 0.27+'s ``memory_profiling`` (``terms.pinned_compile_gib``).
The mechanism is vLLM's source; the capability condition was read from the held-out RTX 5090 logs, post hoc."""

from __future__ import annotations

import pytest

from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.catalog import GIB
from vllm_remedy.vllm.memory import EngineSettings, estimate, resolve
from vllm_remedy.vllm.memory.non_torch import non_torch_gib
from vllm_remedy.vllm.memory.terms import pinned_compile_gib

QWEN3_8B = catalog.model("Qwen/Qwen3-8B")
RTX5090 = catalog.gpu("NVIDIA-GeForce-RTX-5090")
RTX4090 = catalog.gpu("NVIDIA-GeForce-RTX-4090")
TABLE = 151936 * 4096 * 2 / GIB  # Qwen3-8B's embedding table (vocab already a multiple of 64), bf16: 1.16 GiB


def pinned(version: str, capability: tuple[int, int] | None, **inputs: str) -> float:
    settings = EngineSettings.from_flags({"max-model-len": "8192"}, version, inputs)
    return pinned_compile_gib(QWEN3_8B, resolve(QWEN3_8B, RTX5090, settings), capability)


def test_a_cold_start_on_capability_12_pays_the_table_again_from_0_27():
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
def test_older_cards_do_not(capability):
    assert pinned("0.28.0", capability) == 0.0


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
