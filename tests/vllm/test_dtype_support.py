"""bfloat16 below compute capability 8.0, release by release (``vllm.dtype_support``): the rule, the dtype the memory
model resolves, vLLM's own error text as public issues quote it, and the planner's steps away from the refusal."""

from __future__ import annotations

import pytest

from vllm_remedy.remedies.budget import BudgetRequest, plan_budget
from vllm_remedy.vllm import catalog, dtype_support
from vllm_remedy.vllm.failures import failure_class
from vllm_remedy.vllm.memory import EngineSettings, estimate
from vllm_remedy.vllm.memory.settings import resolve
from vllm_remedy.vllm.outcomes import Failure, Outcome
from vllm_remedy.vllm.startup_log import parse_startup_log, render_startup_log

LLAMA = "meta-llama/Llama-3.2-1B-Instruct"  # a bfloat16 checkpoint
T4, V100 = (7, 5), (7, 0)


@pytest.mark.parametrize(("dtype", "version", "refused"), [
    ("bfloat16", "0.6.0", True), ("bfloat16", "0.9.1", True), ("bfloat16", "0.34.0", True),
    ("auto", "0.6.0", True), ("auto", "0.8.5", True), ("auto", "0.9.0", False), ("auto", "0.9.1", False),
    ("auto", "0.34.0", False),
    ("auto", None, False), ("half", "0.8.5", False), ("float16", "0.34.0", False), ("float32", "0.34.0", False),
])
def test_the_rule_by_release(dtype, version, refused):
    assert dtype_support.refused("bfloat16", dtype, T4, version) is refused
    assert dtype_support.refused("bfloat16", dtype, V100, version) is refused
    assert dtype_support.refused("bfloat16", dtype, (8, 0), version) is False  # Ampere takes bfloat16
    assert dtype_support.refused("bfloat16", dtype, None, version) is False  # unknown capability: never refused


def test_a_float16_checkpoint_under_auto_is_never_refused():
    assert not dtype_support.refused("float16", "auto", T4, "0.6.0")


@pytest.mark.parametrize(("version", "gpu", "dtype"), [("0.34.0", "Tesla-T4", "float16"),
                                                       ("0.9.1", "Tesla-V100-SXM2-16GB", "float16"),
                                                       ("0.9.0", "Tesla-T4", "float16"),
                                                       ("0.8.5", "Tesla-T4", "bfloat16"),
                                                       ("0.34.0", "NVIDIA-L4", "bfloat16")])
def test_auto_resolves_to_the_dtype_vllm_runs(version, gpu, dtype):
    model, card = catalog.model(LLAMA), catalog.gpu(gpu)
    res = resolve(model, card, EngineSettings.from_flags({}, version))
    assert res.dtype == dtype and res.weight_dtype_bytes == 2 and res.kv_dtype_bytes == 2


def test_the_fallback_sizes_the_same_as_explicit_half():
    model, card = catalog.model(LLAMA), catalog.gpu("Tesla-T4")
    auto = estimate(model, card, EngineSettings.from_flags({}, "0.34.0"))
    half = estimate(model, card, EngineSettings.from_flags({"dtype": "half"}, "0.34.0"))
    assert auto == half and auto.outcome is Outcome.FITS


def test_the_refusal_holds_no_weights():
    model, card = catalog.model(LLAMA), catalog.gpu("Tesla-T4")
    est = estimate(model, card, EngineSettings.from_flags({"dtype": "bfloat16"}, "0.11.0"))
    assert est.outcome is Outcome.DTYPE_UNSUPPORTED and est.outcome.failure is Failure.DTYPE_UNSUPPORTED
    assert est.peak_gib < 1.0 and est.start == "dtype_unsupported"


# --- vLLM's own words -------------------------------------------------------------------------------------------

# substratusai/vllm-docker#37 (2024-10-22, a T4): the older advice without the space before `dtype`.
ISSUE_SUBSTRATUS_37 = ("ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your "
                       "Tesla T4 GPU has compute capability 7.5. You can use float16 instead by explicitly setting "
                       "the`dtype` flag in CLI, for example: --dtype=half.")
# xming521/WeClone#85 (2025-05-16, a T4): the newer advice.
ISSUE_WECLONE_85 = ("ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your "
                    "Tesla T4 GPU has compute capability 7.5. You can use float16 instead by explicitly setting the "
                    "`dtype` flag in CLI, for example: --dtype=half.")
# vllm-project/vllm#946 (2023-09-05, a V100): the head alone, as its title quotes it.
ISSUE_VLLM_946 = ("ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your "
                  "Tesla V100-SXM2-32GB GPU has compute capability 7.0.")
# xorbitsai/inference#3486 (2025-05-20, a T4 behind Xinference): the actor's address inside the message.
ISSUE_XORBITS_3486 = ("ValueError: [address=0.0.0.0:34479, pid=610] Bfloat16 is only supported on GPUs with compute "
                      "capability of at least 8.0. Your Tesla T4 GPU has compute capability 7.5. You can use float16 "
                      "instead by explicitly setting the `dtype` flag in CLI, for example: --dtype=half.")


@pytest.mark.parametrize(("text", "name", "cap"), [(ISSUE_SUBSTRATUS_37, "Tesla T4", "7.5"),
                                                   (ISSUE_WECLONE_85, "Tesla T4", "7.5"),
                                                   (ISSUE_VLLM_946, "Tesla V100-SXM2-32GB", "7.0"),
                                                   (ISSUE_XORBITS_3486, "Tesla T4", "7.5")])
def test_the_real_error_text_is_classified(text, name, cap):
    report = parse_startup_log(text)
    assert report.failure is Failure.DTYPE_UNSUPPORTED
    assert report.failure_detail == {"gpu_name": name, "capability": cap}
    hint = failure_class(report.failure).hint_for(report.failure_detail)
    assert hint == (f"step 1: roll back to the last known-good revision, then set --dtype half: the {name} has compute "
                    f"capability {cap}, bfloat16 needs 8.0")


def test_the_fallback_warning_is_not_a_failure():
    text = ("WARNING 05-20 10:00:00 [model.py:1500] Your device 'Tesla T4' (with compute capability 7.5) doesn't "
            "support torch.bfloat16. Falling back to torch.float16 for compatibility.")
    assert parse_startup_log(text).failure is not Failure.DTYPE_UNSUPPORTED


@pytest.mark.parametrize("version", ["0.6.3", "0.7.2", "0.8.5", "0.10.1", "0.10.2", "0.34.0"])
def test_the_rendered_refusal_round_trips_and_carries_the_releases_advice(version):
    text = render_startup_log(version, model=LLAMA, weights_gib=0.0, kv_cache_gib=None, max_model_len=2048,
                              total_gpu_gib=14.58, failure=Failure.DTYPE_UNSUPPORTED,
                              failure_detail=dtype_support.detail("Tesla-T4", T4), typed={"dtype": "bfloat16"})
    report = parse_startup_log(text)
    assert report.failure is Failure.DTYPE_UNSUPPORTED and report.failure_detail["capability"] == "7.5"
    assert ("setting the`dtype`" in text) is (version in ("0.6.3", "0.7.2"))
    assert "Starting to load model" not in text
    assert ("platforms/cuda.py" in text) is (version in ("0.10.2", "0.34.0"))


# --- the planner ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("flags", "version"), [({"dtype": "bfloat16"}, "0.34.0"), ({}, "0.8.5"),
                                               ({"dtype": "bfloat16", "max-model-len": "8192"}, "0.11.0")])
def test_the_planner_sets_float16_and_never_keeps_bfloat16_on_a_card_without_it(flags, version):
    model = catalog.model(LLAMA)
    plan = plan_budget(BudgetRequest(model, catalog.gpu("Tesla-T4"), EngineSettings.from_flags(flags, version)))
    assert plan.current.outcome is Outcome.DTYPE_UNSUPPORTED and plan.verdict == "change" and plan.steps
    assert "refused on Tesla-T4 (compute capability below 8.0): --dtype float16" in plan.problem
    assert plan.steps[0].gpu == "Tesla-T4" and plan.steps[0].set["dtype"] == "float16"
    assert "dtype float16: vLLM refuses bfloat16 on this card" in plan.steps[0].reason
    for step in plan.steps:
        assert step.prediction.outcome is Outcome.FITS, step
        card = catalog.gpu(step.gpu)
        assert step.set.get("dtype") == "float16" or (card.capability or (0, 0)) >= (8, 0), step


def test_the_planner_leaves_dtype_alone_where_vllm_takes_it():
    model = catalog.model(LLAMA)
    for gpu, flags in (("Tesla-T4", {}), ("NVIDIA-L4", {"dtype": "bfloat16"})):
        plan = plan_budget(BudgetRequest(model, catalog.gpu(gpu), EngineSettings.from_flags(flags, "0.34.0")))
        assert all("dtype" not in step.set for step in plan.steps), [s.set for s in plan.steps]
