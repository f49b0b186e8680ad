"""Property: whatever the settings, every rung the planner offers is re-derived from its flags alone and
the estimator says it fits, with headroom, meeting the target, inside the policy's bounds."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vllm_remedy.policy import Policy, load_policy
from vllm_remedy.remedies.budget import BudgetRequest, limits, plan_budget
from vllm_remedy.remedies.budget.levers import GRAPH_LEVERS, tp_sizes
from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.memory import EngineSettings, estimate, resolve
from vllm_remedy.vllm.outcomes import Failure, Outcome

ROOT = Path(__file__).resolve().parents[3]
MODELS = ["meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen2.5-7B-Instruct", "mistralai/Mistral-7B-Instruct-v0.3",
          "Qwen/Qwen2.5-14B-Instruct", "meta-llama/Llama-3.1-70B-Instruct", "microsoft/phi-4"]
GPUS = ["NVIDIA-L4", "NVIDIA-A10G", "Tesla-T4", "NVIDIA-L40S", "NVIDIA-A100-SXM4-40GB", "NVIDIA-H100-80GB-HBM3"]
VERSIONS = ["0.6.4", "0.7.3", "0.8.5", "0.9.2", "0.11.0", "0.19.0", "0.21.0"]
POLICIES: list[Policy | None] = [
    None,
    load_policy(ROOT / "policies" / "llama-8b.yaml"),
    Policy.from_mapping({"apiVersion": "vllm-remedy.io/v1alpha1", "kind": "Policy",
                         "kv_cache_fp8": {"status": "allowed", "evaluated": "eval team, 2025-05"},
                         "flags": {"kv-cache-dtype": {"allowed": ["auto", "fp8"]},
                                   "gpu-memory-utilization": {"min": 0.7, "max": 0.93},
                                   "max-num-seqs": {"min": 8, "max": 256}, "tensor-parallel-size": {"max": 4}},
                         "gpu": {"products": ["NVIDIA-L40S", "NVIDIA-H100-80GB-HBM3"]},
                         "peak_concurrency": 4, "enforce_eager": {"max_duration": "1h"}}),
]
FAILURES = [None, Failure.MAX_LEN_EXCEEDS_KV, Failure.NO_CACHE_BLOCKS, Failure.OOM_LOADING_WEIGHTS,
            Failure.FREE_MEMORY_BELOW_UTILIZATION, Failure.OOM_UNDER_LOAD, Failure.SAMPLER_WARMUP_OOM,
            Failure.PROFILE_OOM]


@st.composite
def requests(draw: st.DrawFn) -> tuple[BudgetRequest, dict[str, str]]:
    model = catalog.model(draw(st.sampled_from(MODELS)))
    gpu = catalog.gpu(draw(st.sampled_from(GPUS)))
    flags: dict[str, str] = {}
    if draw(st.booleans()):
        flags["max-model-len"] = str(draw(st.integers(512, model.max_model_len)))
    if draw(st.booleans()):
        flags["gpu-memory-utilization"] = f"{draw(st.integers(50, 98)) / 100:g}"
    if draw(st.booleans()):
        flags["max-num-seqs"] = str(draw(st.sampled_from([4, 16, 64, 256, 512])))
    if draw(st.booleans()):
        flags["tensor-parallel-size"] = str(draw(st.sampled_from([t for t in (1, 2, 4) if t in tp_sizes(model, 1, 4)])))
    inputs = {"other-process-gib": f"{draw(st.integers(0, 40)) / 10:g}"} if draw(st.booleans()) else {}
    if draw(st.booleans()):
        flags["enforce-eager"] = "true"
    if draw(st.booleans()):
        flags["max-num-batched-tokens"] = str(draw(st.sampled_from([2048, 4096, 8192, 16384])))
    if draw(st.booleans()):
        flags["enable-chunked-prefill"] = draw(st.sampled_from(["true", "false"]))
    version = draw(st.sampled_from(VERSIONS))
    req = BudgetRequest(model=model, gpu=gpu, settings=EngineSettings.from_flags(flags, version, inputs),
                        policy=draw(st.sampled_from(POLICIES)), failure=draw(st.sampled_from(FAILURES)),
                        target_concurrency=draw(st.sampled_from([None, 1, 4, 32])),
                        node_gpus=draw(st.sampled_from([None, 1, 2, 8])))
    return req, flags, inputs


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(requests())
def test_every_rung_fits_from_its_flags_alone_and_respects_policy(
        drawn: tuple[BudgetRequest, dict[str, str], dict[str, str]]) -> None:
    req, flags, inputs = drawn
    plan = plan_budget(req)
    lim = limits(req.policy, req.gpu, req.target_concurrency, req.node_gpus)
    assert plan.verdict in ("change", "no_change_needed", "no_fitting_change")
    assert (plan.verdict == "change") == bool(plan.steps)
    for step in plan.steps:
        effective = {**{k: v for k, v in flags.items() if k not in step.unset}, **step.set}
        settings_ = EngineSettings.from_flags(effective, req.settings.version, inputs)
        gpu = catalog.gpu(step.gpu) if step.gpu != req.gpu.product else req.gpu
        est = estimate(req.model, gpu, settings_)
        assert est == step.prediction
        assert est.outcome is Outcome.FITS
        assert est.max_concurrency >= lim.required
        assert est.total_gib - est.peak_gib >= max(0.5, 0.03 * gpu.total_gib)
        assert "max-model-len" in effective  # explicit always
        assert int(effective["max-model-len"]) >= min(lim.len_floor, int(effective["max-model-len"]))
        res = resolve(req.model, gpu, settings_)
        assert res.chunked_prefill or res.mnbt >= res.max_model_len
        assert req.model.num_heads % settings_.tp == 0 and settings_.tp <= lim.tp_max
        if settings_.kv_cache_dtype.startswith("fp8") and not req.settings.kv_cache_dtype.startswith("fp8"):
            assert gpu.fp8 and lim.fp8_allowed
        if req.policy is not None:
            assert req.policy.check_flags(effective) == []
            if step.gpu != req.gpu.product:
                assert any(catalog.gpu(p).product == step.gpu for p in req.policy.gpu.products)
        assert step.temporary == (step.lever == "enforce-eager")
        if step.temporary:
            assert len(plan.steps) == 1 and step.revert_after == lim.eager_max
    # each rung buys a longer max-model-len than the ones above it — except, when the CUDA graphs run short, an
    # alternative answer at the same length (more room for the graphs: a lower utilization, fewer capture sizes)
    graphs = req.failure is Failure.CUDAGRAPH_CAPTURE_OOM or (req.failure is None and plan.current.graph_capture_oom)
    for above, step in zip(plan.steps, plan.steps[1:], strict=False):
        longer = step.prediction.max_model_len > above.prediction.max_model_len
        assert longer or (graphs and step.lever in GRAPH_LEVERS
                          and step.prediction.max_model_len == above.prediction.max_model_len), plan.steps
