"""The planner's search shortcuts answer what the full search answers, and keep the costly plans cheap.

bench/bench_plan.py times the plans; here the estimates a plan makes are counted, as time is not stable on a shared
machine. Each shortcut is checked against what it skips: a card the weights overflow fits at no utilization or
length, and a length search told the bar to beat returns the full search's answer or None.
"""

from __future__ import annotations

import pytest

from vllm_remedy.remedies.budget import BudgetRequest, judge, limits, plan_budget
from vllm_remedy.remedies.budget.judge import Judge
from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.memory import EngineSettings, estimate
from vllm_remedy.vllm.memory.core import weights_overflow
from vllm_remedy.vllm.outcomes import Failure

LLAMA_8B = catalog.model("meta-llama/Llama-3.1-8B-Instruct")
LLAMA_70B = catalog.model("meta-llama/Llama-3.1-70B-Instruct")
QWEN_72B = catalog.model("Qwen/Qwen2.5-72B-Instruct")


@pytest.mark.parametrize(("model", "label", "version", "tp"), [
    (LLAMA_70B, "NVIDIA-L40S", "0.9.2", 1),
    (LLAMA_70B, "NVIDIA-H100-80GB-HBM3", "0.9.2", 1),
    (LLAMA_70B, "NVIDIA-A100-SXM4-40GB", "0.19.0", 2),
    (QWEN_72B, "NVIDIA-A100-80GB-PCIe", "0.12.0", 1),
])
def test_weights_overflow_means_no_utilization_or_length_fits(model, label, version, tp):
    gpu = catalog.gpu(label)
    assert weights_overflow(model, gpu, EngineSettings(version=version, tp=tp))
    for util in [round(0.05 * i, 2) for i in range(1, 21)]:
        for length in (256, 2048, 8192, 32768):
            s = EngineSettings(version=version, tp=tp, gpu_memory_utilization=util, max_model_len=length)
            assert not estimate(model, gpu, s).fits, (util, length)


def test_weights_overflow_is_not_claimed_where_they_load_or_the_estimate_is_unknown():
    l4, h100 = catalog.gpu("NVIDIA-L4"), catalog.gpu("NVIDIA-H100-80GB-HBM3")
    assert not weights_overflow(LLAMA_8B, l4, EngineSettings(version="0.12.0"))
    assert not weights_overflow(LLAMA_70B, h100, EngineSettings(version="0.9.2", tp=2))
    # an unmodelled flag: estimate raises for what it cannot size, so nothing is claimed
    assert not weights_overflow(LLAMA_70B, l4, EngineSettings(version="0.9.2", unmodelled="cannot predict x"))


@pytest.mark.parametrize(("model", "label", "settings"), [
    (LLAMA_8B, "NVIDIA-L4", EngineSettings(version="0.8.5")),  # 2,816 tokens
    (LLAMA_8B, "NVIDIA-L4", EngineSettings(version="0.12.0", gpu_memory_utilization=0.9)),  # 3,072
    (LLAMA_8B, "NVIDIA-L4", EngineSettings(version="0.12.0", gpu_memory_utilization=0.95)),  # none safe
    (QWEN_72B, "NVIDIA-H200", EngineSettings(version="0.19.0", gpu_memory_utilization=0.92, tp=2)),  # 5,120
    (LLAMA_70B, "NVIDIA-B200", EngineSettings(version="0.9.2", gpu_memory_utilization=0.9)),  # 8,960
    (LLAMA_70B, "NVIDIA-B200", EngineSettings(version="0.9.2", gpu_memory_utilization=0.6)),  # none safe
])
def test_longest_with_a_bar_is_the_full_search_cut_at_the_bar(model, label, settings):
    gpu = catalog.gpu(label)
    cap = model.max_model_len

    def fresh() -> Judge:
        lim = limits(None, gpu, 64 if model is QWEN_72B else None, None)
        return Judge(model, lim, estimate(model, gpu, settings), settings)

    full = fresh().longest(settings, gpu, cap)
    lengths = {-1, 0, 2048, 6144, 8192, 16384, 51200, cap - 1, cap}
    if full is not None:
        got = full[1].max_model_len
        lengths |= {got - 1, got, got + 1}
    for above in sorted(lengths):
        cut = fresh().longest(settings, gpu, cap, above=above)
        assert cut == (full if full is not None and full[1].max_model_len > above else None), above


@pytest.mark.parametrize(("model", "label", "settings", "failure", "target", "most"), [
    # main before these shortcuts: 1,151 (every bigger card x every utilization after the TP rung held the cap)
    (LLAMA_8B, "NVIDIA-L4", EngineSettings(version="0.12.0", gpu_memory_utilization=0.95, max_model_len=8192),
     Failure.CUDAGRAPH_CAPTURE_OOM, None, 250),
    # 1,360 (seven cards that cannot hold 70B weights, swept over 46 utilizations each)
    (LLAMA_70B, "NVIDIA-A100-SXM4-40GB", EngineSettings(version="0.9.2"), Failure.OOM_LOADING_WEIGHTS, None, 600),
    # 784
    (QWEN_72B, "NVIDIA-H100-80GB-HBM3", EngineSettings(version="0.19.0", tp=2), None, 64, 650),
])
def test_bench_plans_estimate_a_bounded_number_of_candidates(model, label, settings, failure, target, most):
    judge._estimate.cache_clear()  # process-wide: count this plan's own estimates
    plan_budget(BudgetRequest(model, catalog.gpu(label), settings, failure=failure, target_concurrency=target))
    assert judge._estimate.cache_info().misses <= most
