"""An fp8 block-quantized MoE whose routed experts a TP size splits into part blocks is refused, as vLLM's
``Fp8MoEMethod.create_weights`` refuses it (fp8.py@0.8.5, @0.10.2, @0.13.0; ``validate_fp8_block_shape_moe``
@0.20.0-@0.28.0), unless --enable-expert-parallel keeps each expert whole or (from 0.29.0) a finer block is refined
(``refine_fp8_moe_block_shape``, fused_moe/oracle/fp8.py@0.29.0).

Configs: the inline ``model_config`` of calibration cases (tests/data/calibration, each with its ``source:``):
Qwen/Qwen3-30B-A3B-Instruct-2507-FP8 (moe_intermediate 768, blocks 128x128: 192 per GPU at TP 4, the known failure
of the hostile review) and Qwen/Qwen3-235B-A22B-FP8 (1536: 192 per GPU at TP 8)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml

from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.catalog import ModelSpec
from vllm_remedy.vllm.memory import EngineSettings, estimate
from vllm_remedy.vllm.memory.settings import split_run, tp_split_problem
from vllm_remedy.vllm.outcomes import Outcome

CASES = Path(__file__).resolve().parents[2] / "data" / "calibration"
H100 = "NVIDIA-H100-80GB-HBM3"
REFUSAL_30B = ("tensor-parallel-size: 4 splits each expert's 768 intermediate channels into 192 per GPU, which the "
               "fp8 weight block 128x128 does not divide (--enable-expert-parallel keeps experts whole); vLLM: "
               "ValueError: The output_size of gate's and up's weight = 192 is not divisible by weight quantization "
               "block_n = 128.")


def case_model(name: str) -> ModelSpec:
    case = yaml.safe_load((CASES / f"{name}.yaml").read_text())
    return ModelSpec.from_hf_config(case["model_config"], case["model"])


def qwen3_30b() -> ModelSpec:
    return case_model("l40s-v0.10.2-qwen3-30b-a3b-fp8-tp2-ep")


def problem(model: ModelSpec, tp: int, version: str, ep: bool = False) -> str | None:
    s = EngineSettings(version=version, tp=tp, enable_expert_parallel=ep)
    return tp_split_problem(model, tp, split_run(model, catalog.gpu(H100), s))


@pytest.mark.parametrize("version", ["0.8.5", "0.10.2", "0.13.0", "0.28.0"])
def test_experts_split_into_part_blocks_are_refused(version):
    assert problem(qwen3_30b(), 4, version) == REFUSAL_30B


def test_expert_parallelism_keeps_the_experts_whole_from_0_8():
    model = qwen3_30b()
    assert [problem(model, tp, "0.10.2", ep=True) for tp in (2, 4, 8)] == [None] * 3
    assert problem(model, 2, "0.10.2") is None  # 384 = 3 x 128
    got = problem(model, 4, "0.7.3", ep=True)  # no --enable-expert-parallel before 0.8.0 (arg_utils.py@0.7.3)
    assert got is not None and got.startswith("tensor-parallel-size: 4 splits each expert's 768"), got
    assert "--enable-expert-parallel" not in got


def test_from_0_29_a_finer_block_is_refined():
    """gcd(128, 128, 192, 2048) = 64 >= 32: the scales are refined to 64x64 blocks and the start goes on."""
    assert problem(qwen3_30b(), 4, "0.29.0") is None
    assert problem(qwen3_30b(), 4, "0.34.0") is None


def test_the_235b_at_tp_8_needs_expert_parallelism():
    model = case_model("h100x8-v0.10.0-qwen3-235b-a22b-fp8-tp8-ep-kvfp8-32k")
    got = problem(model, 8, "0.10.0")
    assert got is not None and "192 per GPU" in got, got
    assert problem(model, 8, "0.10.0", ep=True) is None


def test_the_flag_is_read_from_argv_and_the_estimate_refuses_without_it():
    gpu = catalog.gpu(H100)
    refused = estimate(qwen3_30b(), gpu, EngineSettings.from_flags({"tensor-parallel-size": "4"}, "0.10.2"))
    assert refused.outcome is Outcome.CONFIG_REFUSED
    s = EngineSettings.from_flags({"tensor-parallel-size": "4", "enable-expert-parallel": ""}, "0.10.2")
    assert s.enable_expert_parallel
    assert estimate(qwen3_30b(), gpu, s).kv_cache_tokens > 0


def test_expert_parallelism_leaves_the_experts_width_undivided():
    """FusedMoE asserts the experts' width divides by its MoE TP size (layer.py@0.8.5), which is 1 under EP."""
    odd = dataclasses.replace(qwen3_30b(), moe_intermediate_size=1156, weight_block_size=None)
    got = problem(odd, 8, "0.10.2")
    assert got is not None and got.startswith("tensor-parallel-size: 8 does not divide the model's intermediate "
                                              "size 1156"), got
    assert problem(odd, 8, "0.10.2", ep=True) is None
