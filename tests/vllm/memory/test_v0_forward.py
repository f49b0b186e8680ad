"""V0's eager forward peak, counted from what vLLM 0.7.2's model code keeps referenced (v0_forward)."""

import pytest

from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.memory.v0_forward import v0_forward_values_per_token

QWEN14 = catalog.model("Qwen/Qwen2.5-14B-Instruct")
LLAMA8 = catalog.model("meta-llama/Llama-3.1-8B-Instruct")


def test_qwen2_keeps_gate_up_through_down_proj_and_tp_adds_the_all_reduce_output() -> None:
    """qwen2.py binds ``gate_up``: at down_proj 3 x I/TP + 4 H, plus the out-of-place all-reduce row at TP >= 2."""
    inter, hidden = QWEN14.intermediate_size, QWEN14.hidden_size
    assert v0_forward_values_per_token(QWEN14, 1) == 3 * inter + 4 * hidden
    assert v0_forward_values_per_token(QWEN14, 2) == 3 * inter / 2 + 5 * hidden


def test_qwen2_tp2_matches_the_held_out_a100_log() -> None:
    """Checked, not fitted: 2.84 GiB logged peak (a100-40gb-x2 0.7.2 case) for 32,768 fp16 tokens (+0.02 base)."""
    gib = v0_forward_values_per_token(QWEN14, 2) * 2 * 32768 / 1024**3 + 0.02
    assert gib == pytest.approx(2.84, abs=0.02)


def test_llama_frees_gate_up_so_the_fitted_count_stands_at_tp1() -> None:
    inter, hidden = LLAMA8.intermediate_size, LLAMA8.hidden_size
    assert v0_forward_values_per_token(LLAMA8, 1) == 3 * (inter + hidden)
    assert v0_forward_values_per_token(LLAMA8, 8) == max(3 * (inter / 8 + hidden), inter / 8 + 5 * hidden)
