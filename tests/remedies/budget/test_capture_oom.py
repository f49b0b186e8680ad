"""A start that dies capturing CUDA graphs (after the KV cache): predicted, and planned for with a smaller capture
size and lower utilization, and eager beside them as a stopgap."""

from __future__ import annotations

import pytest

from vllm_remedy.errors import UserError
from vllm_remedy.remedies.budget import BudgetRequest, plan_budget
from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.memory import EngineSettings, estimate
from vllm_remedy.vllm.outcomes import Failure

LLAMA = catalog.model("meta-llama/Llama-3.1-8B-Instruct")
L4 = catalog.gpu("NVIDIA-L4")
FLAGS = {"gpu-memory-utilization": "0.97", "max-model-len": "8192"}
ROOMY = {"gpu-memory-utilization": "0.95", "max-model-len": "8192"}  # graphs do not fit; a short target does


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


@pytest.mark.parametrize(("version", "flag"), [("0.9.2", "cuda-graph-sizes"),
                                             ("0.12.0", "max-cudagraph-capture-size")])
def test_plan_offers_a_smaller_capture_size_lower_utilization_then_temporary_eager(version, flag):
    settings = EngineSettings.from_flags(ROOMY, version)
    plan = plan_budget(BudgetRequest(LLAMA, L4, settings, failure=Failure.CUDAGRAPH_CAPTURE_OOM,
                                     target_concurrency=2))
    assert plan.verdict == "change"
    assert [s.lever for s in plan.steps] == ["cudagraph-capture-size", "gpu-memory-utilization", "enforce-eager"]
    capture, lower, eager = plan.steps
    # The release's own spelling; the smaller pool lets the card keep more utilization than lowering it alone.
    assert int(capture.set[flag]) < 512 and not capture.temporary and "max-model-len" not in capture.set
    assert float(lower.set["gpu-memory-utilization"]) < float(capture.set["gpu-memory-utilization"]) < 0.95
    assert capture.prediction.cudagraph_gib < lower.prediction.cudagraph_gib
    assert capture.prediction.kv_cache_gib > lower.prediction.kv_cache_gib
    assert eager.temporary and eager.set["enforce-eager"] == "true" and eager.revert_after is not None
    assert eager.reason.startswith("TEMPORARY, revert within ")
    assert any("stopgap for the CUDA-graph capture OOM" in n for n in plan.notes)
    # Each step's prediction is the estimator's for exactly its flags, and leaves more room than the failed start.
    current = estimate(LLAMA, L4, settings)
    for step in plan.steps:
        flags = {**ROOMY, **step.set}
        assert step.prediction == estimate(LLAMA, L4, EngineSettings.from_flags(flags, version))
        assert step.prediction.cudagraph_gib == 0 or (
            step.prediction.total_gib - step.prediction.peak_gib > current.total_gib - current.peak_gib)


def test_no_capture_size_step_where_the_release_has_no_flag():
    plan = plan_budget(BudgetRequest(LLAMA, L4, EngineSettings.from_flags(ROOMY, "0.8.5"),
                                     failure=Failure.CUDAGRAPH_CAPTURE_OOM, target_concurrency=2))
    assert "cudagraph-capture-size" not in [s.lever for s in plan.steps]
    assert ("no capture-size step: vLLM 0.8.5 sets the CUDA-graph sizes only through --compilation-config "
            "(cudagraph_capture_sizes), which the planner does not write") in plan.notes
    # ...and vLLM 0.8.5 refuses the flag, as its argument parser does.
    refused = r"^max-cudagraph-capture-size: vLLM 0.8.5 has no such flag \(added in 0.11.1\)"
    with pytest.raises(UserError, match=refused):
        EngineSettings.from_flags({**ROOMY, "max-cudagraph-capture-size": "128"}, "0.8.5")


def test_the_graph_pool_shrinks_with_the_largest_captured_size_and_is_unchanged_by_default():
    at = {size: estimate(LLAMA, L4, EngineSettings.from_flags({**ROOMY, "cuda-graph-sizes": size}, "0.9.2"))
          for size in ("512", "256", "1 8 64")}
    default = estimate(LLAMA, L4, EngineSettings.from_flags(ROOMY, "0.9.2"))
    assert at["512"] == default  # the default's size, said out loud: the fitted pool
    assert at["1 8 64"].cudagraph_gib < at["256"].cudagraph_gib < default.cudagraph_gib
    assert at["256"].kv_cache_tokens == default.kv_cache_tokens  # before 0.20 the graphs sit outside the budget


def test_other_failures_keep_eager_as_the_last_resort_only():
    settings = EngineSettings.from_flags(FLAGS, "0.9.2")
    plan = plan_budget(BudgetRequest(LLAMA, L4, settings, failure=Failure.MAX_LEN_EXCEEDS_KV))
    assert "enforce-eager" not in [s.lever for s in plan.steps]
