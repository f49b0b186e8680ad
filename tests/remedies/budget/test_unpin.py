"""A flag-sized KV cache that does not start (larger than the card leaves: kv_cache_allocation_oom; or a pinned
start seen to fail) is planned back to the utilization budget: every step unsets the flag, and the budget's levers
then size the cache (``pinned.UNPIN_NOTE`` says why that, not a smaller pin). A pinned cache that fits is left."""

from __future__ import annotations

import pytest

from vllm_remedy.remedies.budget import BudgetRequest, plan_budget
from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.memory import EngineSettings
from vllm_remedy.vllm.memory.pinned import UNPIN_NOTE
from vllm_remedy.vllm.outcomes import Failure

LLAMA = catalog.model("meta-llama/Llama-3.1-8B-Instruct")
L4 = catalog.gpu("NVIDIA-L4")


@pytest.mark.parametrize(("version", "flag", "value"), [("0.11.0", "kv-cache-memory-bytes", "8G"),
                                                        ("0.11.0", "num-gpu-blocks-override", "10000"),
                                                        ("0.21.0", "num-gpu-blocks-override", "4000")])
def test_an_oversized_pin_is_lifted_by_every_step(version, flag, value):
    settings = EngineSettings.from_flags({"max-model-len": "16384", flag: value}, version)
    plan = plan_budget(BudgetRequest(LLAMA, L4, settings, target_concurrency=2))
    assert plan.current.start == "kv_cache_allocation_oom"
    assert plan.verdict == "change" and plan.steps
    for step in plan.steps:
        assert flag in step.unset and flag not in step.set
        assert step.prediction.start == "fits" and step.prediction.peak_gib <= step.prediction.total_gib
    assert UNPIN_NOTE in plan.notes


def test_the_observed_allocation_oom_lifts_it_too():
    settings = EngineSettings.from_flags({"max-model-len": "16384", "kv-cache-memory-bytes": "8G"}, "0.11.0")
    plan = plan_budget(BudgetRequest(LLAMA, L4, settings, failure=Failure.KV_CACHE_ALLOCATION_OOM,
                                     target_concurrency=2))
    assert plan.steps and all("kv-cache-memory-bytes" in s.unset for s in plan.steps)


def test_a_pin_that_fits_is_kept():
    settings = EngineSettings.from_flags({"max-model-len": "16384", "kv-cache-memory-bytes": "4G"}, "0.11.0")
    plan = plan_budget(BudgetRequest(LLAMA, L4, settings, target_concurrency=1))
    assert all(not s.unset for s in plan.steps) and UNPIN_NOTE not in plan.notes


def test_on_0_34_the_lifted_pin_writes_the_utilization_it_was_planned_with():
    """0.34's default utilization is 0.92 with a pin and 1.0 (the extensible cache) without: the step writes it."""
    settings = EngineSettings.from_flags({"max-model-len": "16384", "num-gpu-blocks-override": "4000"}, "0.34.0")
    plan = plan_budget(BudgetRequest(LLAMA, L4, settings, target_concurrency=2))
    assert plan.current.start == "kv_cache_allocation_oom" and plan.steps
    for step in plan.steps:
        assert "num-gpu-blocks-override" in step.unset and "gpu-memory-utilization" in step.set
