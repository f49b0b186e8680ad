"""The fast AWQ Marlin replay and its packaged table give, to the byte, what the replay as first written gives.

The oracle (``fixtures.awq_replay_oracle``) runs every layer through a plain allocator; the fast replay collapses
the shard copies' malloc/free pairs (a pass that adds no segment leaves the allocator unchanged) and keeps free
blocks as sorted ints. The table (``awq_marlin_table``) is only the replay's output, written by
scripts/awq_marlin_table.py.
"""

from __future__ import annotations

import dataclasses
import itertools
from pathlib import Path

import pytest
import yaml

from fixtures.awq_replay_oracle import oracle_replay
from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.memory.awq_marlin_load import ReplayInputs, applies, replay, replay_inputs, simulate
from vllm_remedy.vllm.memory.awq_marlin_table import REPLAYED

CASES = Path(__file__).resolve().parents[2] / "data" / "calibration"


def _case_models() -> list[tuple[str, catalog.ModelSpec]]:
    found = []
    for path in sorted(CASES.glob("*.yaml")):
        case = yaml.safe_load(path.read_text())
        if "model_config" in case:
            model = catalog.ModelSpec.from_hf_config(case["model_config"], case["model"], case.get("model_params_b"))
        else:
            model = catalog.model(case["model"])
        if applies(model, None, (8, 9), (0, 28, 0), 1):
            found.append((path.stem, model))
    return found


def test_the_calibration_cases_awq_models_replay_as_the_oracle_does() -> None:
    found = _case_models()
    assert len(found) >= 15  # 32B, 14B, 8B, Qwen2.5-7B, Coder-32B, Llama-2-7B-32K, 70B starts...
    for stem, model in found:
        for tp in (1, 2, 4):
            if applies(model, None, (8, 9), (0, 28, 0), tp):
                assert simulate.__wrapped__(replay_inputs(model, tp, 2)) == oracle_replay(model, tp, 2), (stem, tp)


QWEN3_8B = catalog.model("Qwen/Qwen3-8B-AWQ")
QWEN25_7B = catalog.model("Qwen/Qwen2.5-7B-Instruct-AWQ")


@pytest.mark.parametrize(("base", "hidden", "inter", "heads", "kv", "layers", "group", "max_pos", "tp", "dtype"), [
    (base, *shape, tp, dtype)
    for base, shape, tp, dtype in itertools.product(
        (QWEN3_8B, QWEN25_7B),
        ((2048, 5632, 16, 4, 7, 128, 4096), (3072, 8192, 24, 8, 9, 64, 32768), (4096, 14336, 32, 8, 12, 128, 131072),
         (6144, 16384, 48, 8, 5, 32, 8192), (8192, 28672, 64, 8, 4, 128, 40960), (1536, 8960, 12, 2, 11, 128, 2048)),
        (1, 2, 4), (2, 4))
])
def test_a_grid_of_shapes_replays_as_the_oracle_does(base: catalog.ModelSpec, hidden: int, inter: int, heads: int,
                                                    kv: int, layers: int, group: int, max_pos: int, tp: int,
                                                    dtype: int) -> None:
    model = dataclasses.replace(base, hidden_size=hidden, intermediate_size=inter, num_heads=heads, num_kv_heads=kv,
                                head_dim=128, num_layers=layers, group_size=group, max_model_len=max_pos)
    if not applies(model, None, (8, 9), (0, 28, 0), tp):
        pytest.skip("shapes do not divide at this TP")
    assert simulate.__wrapped__(replay_inputs(model, tp, dtype)) == oracle_replay(model, tp, dtype)


def _spec(m: ReplayInputs) -> catalog.ModelSpec:
    """A model whose replay inputs are ``m`` (the architecture only sets the qkv bias and q/k norms)."""
    arch = "Qwen2ForCausalLM" if m.qkv_bias else "Qwen3ForCausalLM" if m.qk_norm else "LlamaForCausalLM"
    assert not (m.qkv_bias and m.qk_norm)
    return dataclasses.replace(QWEN3_8B, architecture=arch, hidden_size=m.hidden, num_heads=m.heads,
                               num_kv_heads=m.kv_heads, head_dim=m.head_dim, intermediate_size=m.intermediate,
                               group_size=m.group, num_layers=m.layers, vocab_size=m.vocab, max_model_len=m.max_pos,
                               tie_word_embeddings=m.tied)


def test_every_table_entry_is_the_oracles_output() -> None:
    assert len(REPLAYED) > 50
    for key, value in REPLAYED.items():
        m = ReplayInputs(*key)
        assert replay_inputs(_spec(m), m.tp, m.dtype_bytes) == m
        assert oracle_replay(_spec(m), m.tp, m.dtype_bytes) == value, key


def test_a_catalog_checkpoint_is_looked_up_not_replayed() -> None:
    model = catalog.model("Qwen/Qwen3-32B-AWQ")
    assert replay_inputs(model, 1, 2) in REPLAYED
    simulate.cache_clear()
    assert replay(model, 1, 2) == oracle_replay(model, 1, 2)
    assert simulate.cache_info().misses == 0
