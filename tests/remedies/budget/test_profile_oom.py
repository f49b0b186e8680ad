"""A start that dies in the memory-profiling forward (``profile_oom``) is planned for with the levers that shrink what
the profile holds per GPU - a smaller --max-num-batched-tokens, or TP - never with a higher utilization alone, which
only sizes the KV cache after the profile."""

from __future__ import annotations

import dataclasses

from vllm_remedy.remedies.budget import BudgetRequest, plan_budget
from vllm_remedy.remedies.budget.judge import _RAISES
from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.memory import EngineSettings, estimate
from vllm_remedy.vllm.outcomes import Failure

LLAMA = catalog.model("meta-llama/Llama-3.1-8B-Instruct")
L4 = catalog.gpu("NVIDIA-L4")
HUGE_BATCH = {"gpu-memory-utilization": "0.9", "max-model-len": "8192", "max-num-batched-tokens": "65536"}


def _settings(flags: dict[str, str], other: float = 0.0) -> EngineSettings:
    return dataclasses.replace(EngineSettings.from_flags(flags, "0.19.0"), other_process_gib=other)


def test_a_huge_batch_is_answered_by_a_smaller_batch():
    settings = _settings(HUGE_BATCH)
    assert estimate(LLAMA, L4, settings).start == "profile_oom"
    plan = plan_budget(BudgetRequest(LLAMA, L4, settings, failure=Failure.PROFILE_OOM, target_concurrency=2))
    assert plan.verdict == "change" and "observed profile_oom (predicted the same)" in plan.problem
    first = plan.steps[0]
    assert first.lever == "max-num-batched-tokens" and int(first.set["max-num-batched-tokens"]) < 65536
    assert all(set(s.set) != {"gpu-memory-utilization"} for s in plan.steps)


def test_other_processes_on_the_card_are_answered_by_tp_not_utilization():
    settings = _settings({"gpu-memory-utilization": "0.7", "max-model-len": "8192"}, other=5.9)
    assert estimate(LLAMA, L4, settings).start == "profile_oom"
    plan = plan_budget(BudgetRequest(LLAMA, L4, settings, failure=Failure.PROFILE_OOM, target_concurrency=2,
                                     node_gpus=2))
    assert [s.lever for s in plan.steps] == ["tensor-parallel-size"]
    assert plan.steps[0].set["tensor-parallel-size"] == "2"


def test_only_a_smaller_profile_footprint_addresses_it():
    """When the log shows a profile_oom the estimator did not predict, a step must still shrink the profile's
    footprint: a higher utilization leaves it as it was."""
    raises = _RAISES["profile_room"]
    cur_s = _settings(HUGE_BATCH)
    cur = estimate(LLAMA, L4, cur_s)
    higher = _settings({**HUGE_BATCH, "gpu-memory-utilization": "0.95"})
    smaller = _settings({**HUGE_BATCH, "max-num-batched-tokens": "8192"})
    assert not raises(cur, estimate(LLAMA, L4, higher), cur_s, higher, 1.1)
    assert raises(cur, estimate(LLAMA, L4, smaller), cur_s, smaller, 1.1)
