"""What a startup log showed of the KV cache (tokens, memory, vLLM's estimated maximum length) as the planner's scale,
and the budget operation reading it from the crashed pods' reports."""

from __future__ import annotations

from vllm_remedy import hub
from vllm_remedy.operations.budget import _logged_kv
from vllm_remedy.remedies.budget.observed import KvObservation, kv_scale
from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.catalog import GIB
from vllm_remedy.vllm.memory import EngineSettings, estimate

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
#: The report a failing 0.10.x V1 start gives (``StartupReport.to_dict()``): the memory line and vLLM's estimate.
REFUSED = {"kv_cache_gib": 2.75, "kv_cache_tokens": None, "tp_size": None, "gpu_memory_utilization": None,
           "failure": "max_len_exceeds_kv",
           "failure_detail": {"max_model_len": 131072, "needed_gib": 8.0, "available_gib": 2.75,
                              "suggested_max_model_len": 45056}}


def _llama_tp2() -> tuple:
    model, gpu = hub.resolve(LLAMA, None)[0], catalog.gpu("NVIDIA-L40S")
    return model, gpu, EngineSettings.from_flags({"tensor-parallel-size": "2"}, "0.10.1", {})


def test_a_refused_start_reads_its_memory_and_estimated_length():
    assert KvObservation.from_report(REFUSED) == KvObservation(gib=2.75, max_len=45056)
    assert KvObservation.from_report({"kv_cache_gib": None, "failure_detail": {}}) is None


def test_the_estimated_length_alone_scales_by_the_bytes_vllm_needs_for_it():
    model, gpu, settings = _llama_tp2()
    predicted = estimate(model, gpu, settings).kv_cache_gib
    scale, note = kv_scale(KvObservation(max_len=45056), model, gpu, settings)
    assert abs(scale - 45056 * 64 * 1024 / (predicted * GIB)) < 1e-9  # 64 KiB a token on each of the 2 ranks
    assert note is not None and "estimated maximum model length of 45,056 (2.75 GiB per GPU)" in note


def test_a_tokens_line_alone_keeps_its_ratio_and_wording():
    model, gpu, settings = _llama_tp2()
    predicted = estimate(model, gpu, settings).kv_cache_tokens
    scale, note = kv_scale(KvObservation(tokens=predicted // 2), model, gpu, settings)
    assert scale == (predicted // 2) / predicted
    assert note == (f"the log shows {predicted // 2:,} KV tokens, {predicted:,} predicted: concurrency targets are "
                    f"scaled by {scale:.3f}")
    assert kv_scale(KvObservation(tokens=predicted * 2), model, gpu, settings) == (1.0, None)  # more: no scale


def test_the_log_is_compared_at_the_settings_it_ran_with():
    """A log taken at 0.80 is compared with the 0.80 prediction even when the plan starts from 0.90."""
    model, gpu, settings = _llama_tp2()
    at_80 = estimate(model, gpu, EngineSettings.from_flags({"tensor-parallel-size": "2",
                                                             "gpu-memory-utilization": "0.8"}, "0.10.1", {}))
    scale, _ = kv_scale(KvObservation(gib=2.75, utilization=0.8), model, gpu, settings)
    assert abs(scale - 2.75 / at_80.kv_cache_gib) < 1e-9


def test_the_budget_operation_takes_the_smallest_figures_of_the_current_revisions_pods():
    pods = {"pods": [
        {"new": True, "containers": [{"startup": {"report": REFUSED}}]},
        {"new": True, "containers": [{"startup": {"report": {**REFUSED, "kv_cache_gib": 2.5,
                                                             "failure_detail": {}}}}]},
        {"new": False, "containers": [{"startup": {"report": {"kv_cache_tokens": 100, "kv_cache_gib": 0.1}}}]},
        {"new": True, "containers": [{"startup": None}]},
    ]}
    assert _logged_kv(pods) == KvObservation(gib=2.5, max_len=45056)
    assert _logged_kv({"pods": []}) is None
