"""8-bit compressed-tensors channel checkpoints carry float32 per-output-channel weight scales (``weight_scales``)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import yaml

from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.catalog import GIB
from vllm_remedy.vllm.memory.calibration import estimate_case
from vllm_remedy.vllm.memory.weight_scales import channel_scale_gib

CASES = Path(__file__).resolve().parents[2] / "data" / "calibration"
L40S_FP8 = "l40s-v0.11.0-r1-distill-qwen-32b-fp8-fp16-24k"


def _case(name: str) -> dict:
    return yaml.safe_load((CASES / f"{name}.yaml").read_text())


def _spec(name: str) -> catalog.ModelSpec:
    case = _case(name)
    return catalog.ModelSpec.from_hf_config(case["model_config"], case["model"], case.get("model_params_b"))


def test_one_float32_per_output_row_of_each_linear() -> None:
    model = _spec(L40S_FP8)  # Qwen2 32B: qkv 7,168, o 5,120, gate_up 55,296, down 5,120 rows; 64 layers
    assert channel_scale_gib(model, 1) * GIB == 64 * (7168 + 5120 + 55296 + 5120) * 4
    # TP 2: qkv and gate_up split their outputs; the row-parallel o and down keep every output row on each rank
    assert channel_scale_gib(model, 2) * GIB == 64 * (3584 + 5120 + 27648 + 5120) * 4


def test_only_channel_strategy_8_bit_compressed_tensors() -> None:
    model = _spec(L40S_FP8)
    assert channel_scale_gib(replace(model, group_size=128), 1) == 0.0  # tensor / group strategy: not this layout
    assert channel_scale_gib(replace(model, weight_block_size=(128, 128)), 1) == 0.0  # block-wise: left out
    assert channel_scale_gib(replace(model, quantization="fp8"), 1) == 0.0  # Fp8LinearMethod: per-tensor scales
    assert channel_scale_gib(replace(model, weight_bits=4), 1) == 0.0  # wNa16: int4_overhead sizes its scales
    assert channel_scale_gib(replace(model, quantization=None, weight_bits=16), 1) == 0.0


def test_l40s_fp8_32b_weights_reach_the_logged_load() -> None:
    """Post hoc: the log that exposed it loads 32.1993 GiB; without the scales 32.185 were charged (15 MiB short)."""
    charged = estimate_case(_case(L40S_FP8)).weights_gib
    assert 32.1993 <= charged < 32.1993 + 4 / 1024  # at most 4 MiB above: freed blocks reused, not modelled
