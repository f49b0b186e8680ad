"""The AWQ Marlin load replayed pool by pool from compiled templates (``alloc_pools``) gives, to the byte, what the
replay by key through ``CachingAllocator`` gives.

Checked three ways: every entry of ``awq_marlin_table`` (written by the replay by key, itself checked against the
oracle by test_awq_marlin_table.py); the oracle (``fixtures.awq_replay_oracle``, the replay as first written) on a
grid of shapes in neither the table nor the catalog, chosen to reach every pool (zero points of 1 MiB or less in the
small pool, 10-20 MiB blocks in their own segments, requests of exactly 20 MiB that a whole free 20 MiB segment
serves) and the padded Qwen2.5-72B-AWQ config.json; and random request sequences through both allocators.
"""

from __future__ import annotations

import dataclasses
import itertools
import random
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from fixtures.awq_replay_oracle import oracle_replay
from vllm_remedy import hub
from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.memory.alloc_pools import Recorder, Trace
from vllm_remedy.vllm.memory.alloc_sim import MIB, CachingAllocator
from vllm_remedy.vllm.memory.awq_marlin_load import LOAD_MAX_SPLIT, ReplayInputs, applies, replay_inputs, simulate
from vllm_remedy.vllm.memory.awq_marlin_table import REPLAYED

CONFIGS = Path(__file__).resolve().parents[2] / "data" / "configs"
QWEN3_8B = catalog.model("Qwen/Qwen3-8B-AWQ")


def _spec(m: ReplayInputs) -> catalog.ModelSpec:
    """A model whose replay inputs are ``m`` (the architecture only sets the qkv bias and q/k norms)."""
    arch = "Qwen2ForCausalLM" if m.qkv_bias else "Qwen3ForCausalLM" if m.qk_norm else "LlamaForCausalLM"
    return dataclasses.replace(QWEN3_8B, architecture=arch, hidden_size=m.hidden, num_heads=m.heads,
                               num_kv_heads=m.kv_heads, head_dim=m.head_dim, intermediate_size=m.intermediate,
                               group_size=m.group, num_layers=m.layers, vocab_size=m.vocab, max_model_len=m.max_pos,
                               tie_word_embeddings=m.tied)


def test_every_table_entry_is_replayed_to_the_byte() -> None:
    assert len(REPLAYED) > 50
    for key, value in REPLAYED.items():
        assert simulate.__wrapped__(ReplayInputs(*key)) == value, key


# (hidden, heads, kv heads, head dim, intermediate, group, layers, vocab, max_pos, tied, qkv bias, q/k norms)
GRID = [
    (896, 14, 2, 64, 4864, 32, 5, 151936, 32768, True, True, False),  # zero points in the small pool
    (2048, 16, 4, 128, 5632, 64, 9, 32000, 4096, False, False, False),
    (3072, 24, 8, 128, 8192, 128, 13, 128256, 8192, True, False, True),
    (4096, 32, 8, 128, 14336, 128, 11, 128256, 131072, False, False, False),
    (5120, 40, 8, 128, 13824, 128, 17, 152064, 32768, False, True, False),  # 20 MiB requests at TP 1
    (5120, 40, 8, 128, 25600, 64, 7, 151936, 40960, False, False, True),
    (6144, 48, 8, 128, 16384, 32, 6, 65536, 8192, False, False, False),
    (8192, 64, 8, 128, 29696, 128, 21, 152064, 32768, False, True, False),  # 20 MiB qkv qweight at TP 2
    (7168, 56, 8, 128, 19456, 128, 10, 100000, 16384, False, False, True),  # 10-20 MiB blocks in own segments
    (2048, 16, 8, 128, 6144, 128, 1, 32000, 4096, False, False, True),  # one layer: layer 1's template unused
    (4096, 32, 8, 128, 11008, 64, 2, 32000, 4096, True, True, False),
]


@pytest.mark.parametrize(("shape", "tp", "dtype"), list(itertools.product(GRID, (1, 2, 4, 8), (2, 4))))
def test_a_grid_of_shapes_not_in_the_table_replays_as_the_oracle_does(shape: tuple, tp: int, dtype: int) -> None:
    m = ReplayInputs(*shape, tp, dtype)
    model = _spec(m)
    if not applies(model, None, (8, 9), (0, 28, 0), tp):
        pytest.skip("shapes do not divide at this TP")
    assert replay_inputs(model, tp, dtype) == m and tuple(m) not in REPLAYED
    assert simulate.__wrapped__(m) == oracle_replay(model, tp, dtype)


def test_the_padded_72b_config_with_yarn_replays_as_the_oracle_does() -> None:
    """The benchmark's uncatalogued case (bench/bench_memory.py: the published padded 72B, in the table, with the
    Qwen2.5 model cards' YaRN x4 edit, which is not), read as --model-config reads it, at each TP."""
    path = str(CONFIGS / "Qwen2.5-72B-Instruct-AWQ.json")
    config = hub.config_from_json(hub.read_file(path, path), path)
    config["rope_scaling"] = {"factor": 4.0, "original_max_position_embeddings": 32768, "type": "yarn"}
    model = hub.spec_from_config(config, path, path)
    for tp in (1, 2, 4, 8):
        assert applies(model, None, (8, 0), (0, 28, 0), tp)
        assert tuple(replay_inputs(model, tp, 2)) not in REPLAYED
        assert simulate.__wrapped__(replay_inputs(model, tp, 2)) == oracle_replay(model, tp, 2), tp


SIZES = [4, 600, 4096, 300_000, MIB, MIB + 512, 3 * MIB, 7_500_000, 10 * MIB, 15 * MIB, 19 * MIB + 7, 20 * MIB,
         21 * MIB, 30 * MIB, 41 * MIB]


@pytest.mark.parametrize("seed", range(40))
def test_random_requests_give_the_bytes_of_the_allocator_by_key(seed: int) -> None:
    """Pools replayed apart, whole free 20 MiB segments handed to the large requests, adjacent malloc/free pairs
    turned into probes: the same counts as ``CachingAllocator`` after every run and after ``empty_cache``."""
    rng = random.Random(seed)
    rec, by_key = Recorder(), CachingAllocator(LOAD_MAX_SPLIT)
    live: list[int] = []
    for step in range(400):
        nbytes = max(1, rng.choice(SIZES) - rng.randrange(2) * rng.randrange(512))
        draw = rng.random()
        if live and draw < 0.4:
            key = live.pop(rng.randrange(len(live)))
            rec.free(("k", key))
            by_key.free(("k", key))
        elif draw < 0.55:  # a temporary freed at once
            rec.drop(rec.scratch(nbytes))
            by_key.malloc("tmp", nbytes)
            by_key.free("tmp")
        else:
            rec.malloc(("k", step), nbytes)
            by_key.malloc(("k", step), nbytes)
            live.append(step)
    ops = rec.take()
    trace = Trace(LOAD_MAX_SPLIT)
    trace.declare(ops)
    trace.size_for(1)
    small, large = trace.compile(ops)
    trace.run(small, (0,))
    trace.run(large, (0,))
    assert (trace.requested, trace.allocated, trace.reserved) == (by_key.requested, by_key.allocated, by_key.reserved)
    trace.empty_cache()
    by_key.empty_cache()
    assert trace.reserved == by_key.reserved


def _best_of_five(run: Callable[[], object]) -> float:
    """The least CPU time of five runs (CPU, not wall: other processes on the machine do not count)."""
    best = float("inf")
    for _ in range(5):
        start = time.process_time()
        run()
        best = min(best, time.process_time() - start)
    return best


def test_an_uncatalogued_80_layer_replay_takes_well_under_the_oracles_time() -> None:
    """Timed against the oracle in the same process, so the machine's speed cancels: the padded Qwen2.5-72B-AWQ at
    TP 2 replayed by key (before the pools) took 0.77-0.99 of the oracle's time, pool by pool 0.35-0.45."""
    path = str(CONFIGS / "Qwen2.5-72B-Instruct-AWQ.json")
    model = hub.spec_from_config(hub.config_from_json(hub.read_file(path, path), path), path, path)
    inputs = replay_inputs(model, 2, 2)
    ratio = _best_of_five(lambda: simulate.__wrapped__(inputs)) / _best_of_five(lambda: oracle_replay(model, 2, 2))
    assert ratio < 0.6, ratio
