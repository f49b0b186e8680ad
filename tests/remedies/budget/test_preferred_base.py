"""A flag outside the policy's bounds is brought to the policy's ``preferred`` value when that is predicted safe at the
full length; otherwise to the nearest bound as before, with the ladder's other rungs unchanged (hostile15b F11).

Llama-3.1-8B on one L40S, vLLM 0.8.5, policies/llama-8b.yaml (utilization [0.8, 0.92] preferred 0.90, max-num-seqs
[16, 128] preferred 64, peak 8 x 1.25 = 10 requests of 16,384 tokens)."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_remedy.policy import Policy, load_policy
from vllm_remedy.remedies.budget import BudgetRequest, plan_budget
from vllm_remedy.remedies.plan import Plan
from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.memory import EngineSettings
from vllm_remedy.vllm.outcomes import Failure

ROOT = Path(__file__).resolve().parents[3]
POLICY = load_policy(ROOT / "policies" / "llama-8b.yaml")
LLAMA, L40S = catalog.model("meta-llama/Llama-3.1-8B-Instruct"), catalog.gpu("NVIDIA-L40S")


def _plan(util: float, seqs: int = 64, policy: Policy = POLICY, failure: Failure | None = None) -> Plan:
    settings = EngineSettings(version="0.8.5", max_model_len=16384, gpu_memory_utilization=util, max_num_seqs=seqs)
    return plan_budget(BudgetRequest(LLAMA, L40S, settings, policy=policy, failure=failure))


@pytest.mark.parametrize(("util", "failure"), [(0.35, Failure.NO_CACHE_BLOCKS), (0.5, None), (0.99, None)])
def test_an_out_of_bounds_utilization_goes_to_the_preferred_value_and_keeps_the_context(util: float,
                                                                                      failure: Failure | None) -> None:
    plan = _plan(util, failure=failure)
    first = plan.steps[0]
    # before: 0.35 and 0.5 went to the minimum 0.8 with --max-model-len 14848; 0.99 to the maximum 0.92
    assert (first.lever, first.set) == ("gpu-memory-utilization", {"gpu-memory-utilization": "0.9"}), first
    assert first.prediction.max_model_len == 16384 and first.prediction.start == "fits"
    assert "the policy's preferred --gpu-memory-utilization, back inside its bounds" in first.reason
    for step in plan.steps:
        assert POLICY.check_flags({"max-model-len": "16384", "gpu-memory-utilization": f"{util}", "max-num-seqs": "64",
                                   **step.set}) == [], step


def test_two_flags_out_of_bounds_go_to_both_preferred_values() -> None:
    plan = _plan(0.97, seqs=512)
    first = plan.steps[0]
    assert first.set == {"gpu-memory-utilization": "0.9", "max-num-seqs": "64"}, first
    assert first.reason.endswith("--gpu-memory-utilization 0.9, --max-num-seqs 64 at the policy's preferred values")


def test_a_preferred_value_that_does_not_fit_leaves_the_nearest_bound(tmp_path: Path) -> None:
    """Preferred 0.80 holds 9.85 of the 10 requests at 16,384: the base keeps the clamp to 0.92 (the old rule), which
    fits the full length; no rung cuts the context."""
    path = tmp_path / "low-preferred.yaml"
    path.write_text(f"extends: {ROOT / 'policies' / 'llama-8b.yaml'}\n"
                    "flags:\n  gpu-memory-utilization: {min: 0.80, max: 0.92, preferred: 0.80}\n")
    plan = _plan(0.97, policy=load_policy(path))
    first = plan.steps[0]
    assert first.set == {"gpu-memory-utilization": "0.92"} and first.prediction.max_model_len == 16384, first
    assert "(the policy's bound on --gpu-memory-utilization)" in first.reason


def test_a_flag_inside_its_bounds_is_never_moved_to_preferred() -> None:
    """0.85 is inside [0.8, 0.92]: a plan with nothing to change stays so (preferred is for a flag that must be set)."""
    assert _plan(0.85).verdict == "no_change_needed"
