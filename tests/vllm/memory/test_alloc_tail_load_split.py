"""Weights loaded under vLLM's 20 MiB split limit (0.21.0+) keep every rounding tail of a tensor of 20 MiB or more.

Figures from source: ``Worker.load_model`` runs under ``max_split_size_mb=20`` (v1/worker/gpu_worker.py@0.21.0-0.34.0)
and PyTorch's ``should_split`` never splits a request at or above that limit, so a 62.5 MiB request keeps the whole
1.5 MiB rest of its 64 MiB segment (split off, i.e. not charged, without the limit).
"""

from __future__ import annotations

from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.catalog import GIB
from vllm_remedy.vllm.memory.alloc_tail import MIB, load_max_split, unsplit_tail_bytes, weight_floor_gib


def test_the_limit_applies_from_0_21() -> None:
    assert load_max_split((0, 20, 2)) is None  # no _scoped_allocator_max_split in gpu_worker.py@0.20.2
    assert load_max_split((0, 21, 0)) == 20 * MIB
    assert load_max_split((0, 34, 0)) == 20 * MIB


def test_oversize_requests_keep_their_whole_rest() -> None:
    limit = 20 * MIB
    assert unsplit_tail_bytes(int(62.5 * MIB)) == 0  # no limit: the 1.5 MiB rest is split off
    assert unsplit_tail_bytes(int(62.5 * MIB), limit) == int(1.5 * MIB)  # at/above the limit: never split
    assert unsplit_tail_bytes(int(12.5 * MIB), limit) == 0  # below the limit: split as before
    assert unsplit_tail_bytes(25 * MIB, limit) == MIB  # a rest of 1 MiB or less: kept either way


def test_qwen3_awq_down_proj_tails_at_0_28() -> None:
    """Qwen3-32B-AWQ down_proj 25,600 x 5,120 at 4 bits = 62.5 MiB (64 layers); Qwen3-14B-AWQ 17,408 x 5,120 =
    42.5 MiB (40 layers): 1.5 MiB each, no other Qwen3 4-bit linear has a rest above 1 MiB."""
    for name, layers in (("Qwen/Qwen3-32B-AWQ", 64), ("Qwen/Qwen3-14B-AWQ", 40)):
        model = catalog.model(name)
        before = weight_floor_gib(model, 1, 4, 2, version=(0, 20, 2))
        after = weight_floor_gib(model, 1, 4, 2, version=(0, 28, 0))
        assert abs((after - before) - layers * 1.5 * MIB / GIB) < 1e-9
