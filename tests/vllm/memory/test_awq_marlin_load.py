"""An AWQ checkpoint's load on vLLM's Marlin path (0.26-0.29), replayed through PyTorch's caching allocator.

The allocator rules are c10/cuda/CUDACachingAllocator.cpp's; the load sequence is vLLM 0.28.0's (auto_awq.py,
kernels/linear/mixed_precision/marlin.py). The replay is checked against logged "Model loading took" figures, which
vLLM takes from ``max_memory_allocated`` (the live blocks, unsplit rests included).
"""

from __future__ import annotations

import pytest

from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.catalog import GIB
from vllm_remedy.vllm.memory import EngineSettings, resolve
from vllm_remedy.vllm.memory.alloc_sim import MIB, CachingAllocator
from vllm_remedy.vllm.memory.awq_marlin_load import applies, overhead_gib, replay
from vllm_remedy.vllm.memory.weights import weights_gib

QWEN3_32B = catalog.model("Qwen/Qwen3-32B-AWQ")
RTX5090 = catalog.gpu("NVIDIA-GeForce-RTX-5090")


def test_a_mid_size_request_carves_a_20_mib_segment_and_its_free_rest_stays_reserved() -> None:
    a = CachingAllocator(20 * MIB)
    a.malloc("scales", 4 * MIB)
    a.malloc("tmp", 8 * MIB)
    a.free("tmp")
    a.empty_cache()
    assert (a.reserved, a.allocated) == (20 * MIB, 4 * MIB)  # the 16 MiB rest is held by the live 4 MiB block
    a.free("scales")
    a.empty_cache()
    assert a.reserved == 0


def test_under_the_split_limit_a_whole_free_20_mib_segment_is_not_reused_by_a_smaller_request() -> None:
    """``get_free_block``: a request under max_split_size never takes a block of max_split_size or more."""
    a = CachingAllocator(20 * MIB)
    a.malloc("x", 4 * MIB)
    a.free("x")
    a.malloc("y", 4 * MIB)
    assert a.reserved == 40 * MIB
    b = CachingAllocator()  # PyTorch's default, no limit: the cached segment is split again
    b.malloc("x", 4 * MIB)
    b.free("x")
    b.malloc("y", 4 * MIB)
    assert b.reserved == 20 * MIB


def test_an_oversize_request_keeps_its_rest_and_small_requests_share_2_mib_segments() -> None:
    a = CachingAllocator(20 * MIB)
    a.malloc("w", int(62.5 * MIB))
    assert a.allocated == 64 * MIB  # never split at or above the limit
    a.malloc("s1", 800 * 1024)
    a.malloc("s2", 800 * 1024)
    assert a.reserved == 66 * MIB  # both in one 2 MiB small-pool segment


@pytest.mark.parametrize(("name", "logged"), [
    ("Qwen/Qwen3-8B-AWQ", 5.71),  # RTX 4090 0.29.0: "Model loading took 5.71 GiB memory"
    ("Qwen/Qwen3-14B-AWQ", 9.44),  # L40S 0.28.0 write-up: model 9.44 GiB
    ("Qwen/Qwen2.5-7B-Instruct-AWQ", 5.29),  # RTX 4080 0.26.0 write-up: 5.29 weights
])
def test_the_replay_gives_the_logged_model_loading_figures(name: str, logged: float) -> None:
    requested, allocated, reserved = replay(catalog.model(name), 1, 2)
    assert allocated / GIB == pytest.approx(logged, abs=0.005)
    assert requested < allocated < reserved


def test_qwen3_32b_awq_keeps_free_rests_that_0_27_charges() -> None:
    requested, allocated, reserved = replay(QWEN3_32B, 1, 2)
    assert 25 * MIB < reserved - allocated < 35 * MIB
    assert overhead_gib(QWEN3_32B, 1, 2, (0, 28, 0)) == pytest.approx((reserved - requested) / GIB)
    assert overhead_gib(QWEN3_32B, 1, 2, (0, 26, 0)) == pytest.approx((allocated - requested) / GIB)


def test_only_where_the_sequence_was_read() -> None:
    assert applies(QWEN3_32B, None, (12, 0), (0, 28, 0), 1)
    assert applies(QWEN3_32B, "awq_marlin", (8, 9), (0, 26, 0), 1)
    assert not applies(QWEN3_32B, None, (9, 0), (0, 28, 0), 1)  # Machete on Hopper
    assert not applies(QWEN3_32B, None, (12, 0), (0, 25, 0), 1)  # awq_marlin.py's path, not read
    assert not applies(QWEN3_32B, None, (12, 0), (0, 30, 0), 1)
    assert not applies(QWEN3_32B, None, None, (0, 28, 0), 1)
    assert not applies(catalog.model("Qwen/Qwen3-32B"), None, (12, 0), (0, 28, 0), 1)


def test_the_rtx_5090_0_28_start_is_charged_the_replayed_load() -> None:
    """Qwen3-32B-AWQ on the RTX 5090 at 0.28.0: 18.23 GiB charged before (tensors, dense tails, rotary cache), 0.036
    GiB more now: the free rests and the mid-size blocks' unsplit rests of the replay."""
    settings = EngineSettings.from_flags({"max-model-len": "8192", "gpu-memory-utilization": "0.70"}, "0.28.0", {})
    res = resolve(QWEN3_32B, RTX5090, settings)
    assert weights_gib(QWEN3_32B, res, None, RTX5090.capability) == pytest.approx(18.262, abs=0.002)
