"""A tensor-parallel size that splits an AWQ group across two GPUs is refused, as vLLM refuses it while creating the
weights (``quant_config.packed_split_problem``; awq.py / auto_awq.py ``create_weights``, awq_marlin's fallback to it).

Configs (tests/data/configs/SOURCES.md): Qwen/Qwen2.5-72B-Instruct-AWQ as published, whose intermediate_size Qwen
padded to 29696 so that TP 2, 4 and 8 run; and the same checkpoint without that padding (29568, the base model's), the
checkpoint vllm#5675, QwenLM/Qwen3#698 and QwenLM/Qwen3-VL#831 report refused at TP 2 and 4."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from vllm_remedy.remedies.budget import tp_sizes
from vllm_remedy.vllm import catalog, quant_config
from vllm_remedy.vllm.catalog import ModelSpec
from vllm_remedy.vllm.memory import EngineSettings, estimate
from vllm_remedy.vllm.memory.settings import tp_split_problem
from vllm_remedy.vllm.outcomes import Outcome

CONFIGS = Path(__file__).resolve().parents[2] / "data" / "configs"
VLLM_SAYS = ("ValueError: The input size is not aligned with the quantized weight shape. This can be caused by too "
             "large tensor parallel size.")


def spec(name: str, **changes: object) -> ModelSpec:
    config = json.loads((CONFIGS / f"{name}.json").read_text())
    config["quantization_config"].update(changes)
    return ModelSpec.from_hf_config(config, f"acme/{name}")


@pytest.mark.parametrize(("tp", "per_rank"), [(2, 14784), (4, 7392), (8, 3696)])
def test_an_unpadded_awq_72b_is_refused_where_a_group_straddles_two_gpus(tp, per_rank):
    problem = tp_split_problem(spec("Qwen2.5-72B-Instruct-AWQ-unpadded"), tp)
    assert problem is not None
    assert problem.startswith(f"tensor-parallel-size: {tp} splits down_proj's 29568 input channels into {per_rank} "
                              "per GPU, which the AWQ group size 128 does not divide"), problem
    assert quant_config.vllm_exception(problem) == VLLM_SAYS


def test_the_published_padded_checkpoint_takes_every_tp_it_was_padded_for():
    padded = spec("Qwen2.5-72B-Instruct-AWQ")
    assert [tp_split_problem(padded, tp) for tp in (1, 2, 4, 8)] == [None] * 4
    assert tp_sizes(padded, 1, 8) == [1, 2, 4, 8]


def test_the_planner_offers_no_tp_vllm_refuses():
    assert tp_sizes(spec("Qwen2.5-72B-Instruct-AWQ-unpadded"), 1, 8) == [1]


def test_a_smaller_group_that_divides_the_shard_is_accepted():
    """AutoAWQ's q_group_size 64 (AutoAWQ#706's workaround for the 72B): 14784 = 231 x 64 at TP 2."""
    small = spec("Qwen2.5-72B-Instruct-AWQ-unpadded", group_size=64)
    assert (tp_split_problem(small, 2), tp_split_problem(small, 4) is None) == (None, False)  # 7392 = 115.5 x 64


def test_the_estimate_predicts_config_refused():
    got = estimate(spec("Qwen2.5-72B-Instruct-AWQ-unpadded"), catalog.gpu("NVIDIA-H100-80GB-HBM3"),
                   EngineSettings(version="0.11.0", tp=2))
    assert got.outcome is Outcome.CONFIG_REFUSED and got.kv_cache_tokens == 0


def test_a_catalog_variant_is_not_judged_on_a_group_size_no_checkpoint_stated():
    """``Qwen/Qwen2.5-72B-Instruct-AWQ`` from the catalog is the base model's shapes with the -AWQ suffix: the
    published checkpoint is padded, so refusing TP 2 there would refuse what runs."""
    variant = catalog.model("Qwen/Qwen2.5-72B-Instruct-AWQ")
    assert (variant.quantization, variant.intermediate_size) == ("awq", 29568)
    assert tp_split_problem(variant, 2) is None


def test_gptq_with_the_same_shapes_is_not_judged():
    """GPTQ's kernel is chosen per card, dtype and release (Exllama takes float16 from 0.6.6, Machete on Hopper):
    the rule does not claim a refusal it cannot know (``packed_split_problem``'s docstring)."""
    config = json.loads((CONFIGS / "Qwen2.5-72B-Instruct-AWQ-unpadded.json").read_text())
    config["quantization_config"] = {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False,
                                     "sym": True}
    assert tp_split_problem(ModelSpec.from_hf_config(config, "acme/gptq"), 2) is None


def test_o_proj_is_judged_too():
    """Qwen2.5-0.5B's attention output (14 heads x 64 = 896 channels, the catalog's config.json facts) with AutoAWQ's
    group 128 is 448 per GPU at TP 2: RowParallelLinear o_proj meets the same check in awq.py. Read from the source
    only: no vLLM log of it was seen (intel/auto-round#643 reports that checkpoint not starting at TP 2 in SGLang)."""
    models = yaml.safe_load((Path(catalog.__file__).parent / "data" / "models.yaml").read_text())["models"]
    config = dict(next(m for m in models if m["id"] == "Qwen/Qwen2.5-0.5B-Instruct")["config"])
    config["quantization_config"] = json.loads((CONFIGS / "Qwen2.5-72B-Instruct-AWQ.json").read_text())[
        "quantization_config"]
    small = ModelSpec.from_hf_config(config, "acme/Qwen2.5-0.5B-Instruct-AWQ")
    problem = tp_split_problem(small, 2)
    assert problem is not None and problem.startswith("tensor-parallel-size: 2 splits o_proj's 896 input channels "
                                                      "into 448 per GPU"), problem
