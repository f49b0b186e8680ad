"""An fp8 block-quantized checkpoint at a TP that leaves part of a weight block on each GPU is refused, as vLLM refuses
it while creating the weights (``block_split``; fp8.py@0.8.5 ``create_weights``, utils/fp8_utils.py@0.34.0
``validate_fp8_block_shape``).

Configs: the inline ``model_config`` of two calibration cases (tests/data/calibration, each with its ``source:``):
Qwen/Qwen3-4B-Instruct-2507-FP8 (intermediate 9728, blocks 128x128: 1216 per GPU at TP 8, 9.5 blocks) and
Qwen/Qwen3-235B-A22B-FP8, which that case ran at TP 8 with expert parallelism."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from vllm_remedy.errors import UserError
from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.catalog import ModelSpec
from vllm_remedy.vllm.memory import EngineSettings, estimate
from vllm_remedy.vllm.memory.settings import split_run, tp_split_problem
from vllm_remedy.vllm.outcomes import Outcome

CASES = Path(__file__).resolve().parents[2] / "data" / "calibration"
H100 = "NVIDIA-H100-80GB-HBM3"


def case_model(name: str, **quant: object) -> ModelSpec:
    case = yaml.safe_load((CASES / f"{name}.yaml").read_text())
    config = dict(case["model_config"])
    config["quantization_config"] = {**config["quantization_config"], **quant}
    return ModelSpec.from_hf_config(config, case["model"])


def qwen3_4b(**quant: object) -> ModelSpec:
    return case_model("rtx5090-v0.29.0-qwen3-4b-2507-fp8-32k", **quant)


def problem(model: ModelSpec, tp: int, version: str) -> str | None:
    s = EngineSettings(version=version, tp=tp)
    return tp_split_problem(model, tp, split_run(model, catalog.gpu(H100), s))


@pytest.mark.parametrize("version", ["0.6.6", "0.8.5", "0.13.0", "0.14.0", "0.34.0"])
def test_a_split_block_on_down_proj_is_refused_in_every_release_that_reads_blocks(version):
    got = problem(qwen3_4b(), 8, version)
    assert got == ("tensor-parallel-size: 8 splits down_proj's 9728 input channels into 1216 per GPU, which the fp8 "
                   "weight block 128x128 does not divide; vLLM: ValueError: Weight input_size_per_partition = 1216 is "
                   "not divisible by weight quantization block_k = 128."), got


def test_whole_blocks_and_releases_before_blocks_are_accepted():
    model = qwen3_4b()
    assert model.weight_block_size == (128, 128)
    assert [problem(model, tp, "0.11.0") for tp in (1, 2, 4)] == [None] * 3  # 4864 = 38 x 128, 2432 = 19 x 128
    assert problem(model, 8, "0.6.5") is None  # fp8.py@0.6.5 has no weight_block_size
    assert problem(qwen3_4b(weight_block_size=None), 8, "0.11.0") is None


def test_merged_column_partitions_are_let_through_from_0_14():
    """Blocks of 128 x 64: the row inputs (1216 per GPU) are whole, gate_up's 1216 outputs are not 128-multiples."""
    model = qwen3_4b(weight_block_size=[128, 64])
    got = problem(model, 8, "0.13.0")
    assert got is not None and got.startswith("tensor-parallel-size: 8 leaves gate_up_proj's 1216 output channels "
                                              "per GPU"), got
    assert problem(model, 8, "0.14.0") is None  # _maybe_allow_fp8_block_shape_mismatch, linear.py@0.14.0


def test_the_235b_moe_keeps_running_at_tp_8_with_expert_parallelism():
    """Its attention splits into whole blocks (1024 per GPU); its experts stay whole under the case's
    --enable-expert-parallel (at TP 8 without it vLLM refuses 192 per GPU: test_fp8_moe_block_split)."""
    model = case_model("h100x8-v0.10.0-qwen3-235b-a22b-fp8-tp8-ep-kvfp8-32k")
    s = EngineSettings(version="0.10.0", tp=8, enable_expert_parallel=True)
    assert tp_split_problem(model, 8, split_run(model, catalog.gpu(H100), s)) is None


def test_the_estimate_predicts_config_refused():
    got = estimate(qwen3_4b(), catalog.gpu(H100), EngineSettings(version="0.11.0", tp=8))
    assert got.outcome is Outcome.CONFIG_REFUSED


def test_a_block_size_that_is_not_two_integers_cannot_be_predicted():
    with pytest.raises(UserError, match="weight_block_size"):
        qwen3_4b(weight_block_size=[128])
