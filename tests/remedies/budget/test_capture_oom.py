"""A start that dies capturing CUDA graphs (after the KV cache): predicted, and planned for with eager beside
the lasting steps."""

from __future__ import annotations

from vllm_remedy.remedies.budget import BudgetRequest, plan_budget
from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.memory import EngineSettings, estimate
from vllm_remedy.vllm.outcomes import Failure

LLAMA = catalog.model("meta-llama/Llama-3.1-8B-Instruct")
L4 = catalog.gpu("NVIDIA-L4")
FLAGS = {"gpu-memory-utilization": "0.97", "max-model-len": "8192"}


def test_graphs_outside_the_budget_are_predicted_not_to_fit_a_small_card():
    est = estimate(LLAMA, L4, EngineSettings.from_flags(FLAGS, "0.9.2"))
    # vLLM's own checks pass (the KV cache is sized) and the peak with the graph pool exceeds the card.
    assert est.fits and est.graph_capture_oom and est.peak_gib > est.total_gib
    eager = estimate(LLAMA, L4, EngineSettings.from_flags({**FLAGS, "enforce-eager": "true"}, "0.9.2"))
    assert eager.fits and not eager.graph_capture_oom
    lower = estimate(LLAMA, L4, EngineSettings.from_flags({**FLAGS, "gpu-memory-utilization": "0.9"}, "0.9.2"))
    assert not lower.graph_capture_oom
    # From 0.20 the graphs are inside the budget: the same flags leave less KV cache, not a crash.
    assert not estimate(LLAMA, L4, EngineSettings.from_flags(FLAGS, "0.21.0")).graph_capture_oom


def test_plan_offers_lasting_steps_then_temporary_eager():
    settings = EngineSettings.from_flags(FLAGS, "0.9.2")
    plan = plan_budget(BudgetRequest(LLAMA, L4, settings, failure=Failure.CUDAGRAPH_CAPTURE_OOM))
    assert plan.verdict == "change"
    levers = [s.lever for s in plan.steps]
    assert levers[0] == "gpu-memory-utilization" and levers[-1] == "enforce-eager"
    first, last = plan.steps[0], plan.steps[-1]
    assert float(first.set["gpu-memory-utilization"]) < 0.97 and not first.temporary
    assert last.temporary and last.set["enforce-eager"] == "true" and last.revert_after is not None
    assert last.reason.startswith("TEMPORARY, revert within ")
    assert any("stopgap for the CUDA-graph capture OOM" in n for n in plan.notes)
    assert any(n.startswith("a smaller --max-cudagraph-capture-size") for n in plan.notes)
    # Every step leaves more room above the predicted peak than the failed start had, or drops the graphs.
    current = estimate(LLAMA, L4, settings)
    for step in plan.steps:
        assert step.prediction.cudagraph_gib == 0 or (
            step.prediction.total_gib - step.prediction.peak_gib > current.total_gib - current.peak_gib)


def test_other_failures_keep_eager_as_the_last_resort_only():
    settings = EngineSettings.from_flags(FLAGS, "0.9.2")
    plan = plan_budget(BudgetRequest(LLAMA, L4, settings, failure=Failure.MAX_LEN_EXCEEDS_KV))
    assert "enforce-eager" not in [s.lever for s in plan.steps]
