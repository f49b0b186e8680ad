"""Real vLLM logs from public issues (tests/data/logs/SOURCES.md): exact figures and class."""

from __future__ import annotations

import pytest

from vllm_remedy.vllm.outcomes import Failure
from vllm_remedy.vllm.startup_log import StartupReport, classify, parse_startup_log

CASES = {
    "v0.6.3_h100_llama32_vision_truncated.log": dict(
        engine="v0", weights_gib=19.8557, gpu_blocks=2252, max_concurrency=70.38, concurrency_max_len=512,
        failure=Failure.NONE, server_was_up=False, truncated=True),
    "v0.6.4_rtx3090_llama8b_29k_max_len.log": dict(
        engine="v0", weights_gib=14.9888, total_gpu_gib=23.58, non_torch_gib=0.35, kv_cache_gib=2.89,
        gpu_memory_utilization=0.9, gpu_blocks=1478, kv_cache_tokens=23648, max_concurrency=0.82,
        max_model_len=29000, failure=Failure.MAX_LEN_EXCEEDS_KV,
        failure_detail={"max_model_len": 29000, "kv_cache_tokens": 23648, "suggested_max_model_len": 23648}),
    "v0.6.4.post1_compose_no_cache_blocks.log": dict(failure=Failure.NO_CACHE_BLOCKS, weights_gib=None),
    "v0.7_compose_mistral_large_oom_under_load.log": dict(
        failure=Failure.OOM_UNDER_LOAD, total_gpu_gib=79.15,
        failure_detail={"tried_to_allocate": "1.15 GiB", "tried_to_allocate_gib": 1.15, "gpu_index": 0,
                        "total_gpu_gib": 79.15, "free_gib": 1.13, "phase": "serving"}),
    "v0.8_v0_rtx3090_interleaved_ranks.log": dict(
        engine="v0", weights_gib=21.21, non_torch_gib=0.2, activation_gib=0.37, kv_cache_gib=1.57,
        total_gpu_gib=23.58, gpu_memory_utilization=0.99, failure=Failure.NONE, truncated=True),
    "v0.8_v1_rtx5090_sampler_warmup_ranks.log": dict(
        engine="v1", failure=Failure.SAMPLER_WARMUP_OOM, failure_detail={"num_dummy_requests": 1024}),
    # Was "unknown": Ray lost the traceback frames, but the capture had started after the KV cache was sized.
    "v0.8_ray_cudagraph_capture_oom.log": dict(
        engine="v0", failure=Failure.CUDAGRAPH_CAPTURE_OOM, total_gpu_gib=44.53, gpu_memory_utilization=0.98,
        weights_gib=20.64, non_torch_gib=0.28, activation_gib=1.52, kv_cache_gib=21.2,
        failure_detail={"tried_to_allocate": "2.00 MiB", "tried_to_allocate_gib": 0.002, "gpu_index": 6,
                        "total_gpu_gib": 44.53, "free_gib": 0.0004, "phase": "cuda_graph_capture"}),
    "v0.8.3_v1_max_len_no_estimate.log": dict(
        engine="v1", failure=Failure.MAX_LEN_EXCEEDS_KV, max_model_len=1048576, kv_cache_gib=9.97,
        failure_detail={"max_model_len": 1048576, "needed_gib": 24.0, "available_gib": 9.97}),
    "v0.9.1_l40s_free_memory.log": dict(
        engine="v1", failure=Failure.FREE_MEMORY_BELOW_UTILIZATION, total_gpu_gib=47.38,
        gpu_memory_utilization=0.95,
        failure_detail={"free_gib": 31.44, "total_gpu_gib": 47.38, "gpu_memory_utilization": 0.95,
                        "requested_gib": 45.01}),
    "v0.10.2_fp8_kv_healthy.log": dict(
        engine="v1", kv_cache_gib=10.55, kv_cache_tokens=230528, max_concurrency=2.31,
        concurrency_max_len=100000, max_model_len=100000, failure=Failure.NONE),
    "v0.10.2_fp8_max_len_estimate.log": dict(
        failure=Failure.MAX_LEN_EXCEEDS_KV, max_model_len=221000, kv_cache_gib=5.59,
        failure_detail={"max_model_len": 221000, "needed_gib": 10.12, "available_gib": 5.59,
                        "suggested_max_model_len": 122080}),
    "v0.10.2_enginecore_qwen3_14b_kv.log": dict(
        engine="v1", kv_cache_gib=6.51, kv_cache_tokens=42656, max_concurrency=1.3, concurrency_max_len=32768,
        failure=Failure.NONE),
    "v0.11.0_gpt_oss_h100_no_cache_blocks.log": dict(engine="v1", failure=Failure.NO_CACHE_BLOCKS),
    "v0.11_create_weights_oom.log": dict(
        engine="v1", failure=Failure.OOM_LOADING_WEIGHTS, total_gpu_gib=93.09,
        failure_detail={"tried_to_allocate": "896.00 MiB", "tried_to_allocate_gib": 0.875, "gpu_index": 0,
                        "total_gpu_gib": 93.09, "free_gib": 0.7225, "phase": "loading_weights"}),
    "v0.15_ci_ansi_caret_free_memory.log": dict(
        failure=Failure.FREE_MEMORY_BELOW_UTILIZATION,
        failure_detail={"device": "cuda:0", "free_gib": 1.54, "total_gpu_gib": 22.05,
                        "gpu_memory_utilization": 0.9, "requested_gib": 19.84}),
    "v0.16_ci_free_memory_cuda1.log": dict(
        failure=Failure.FREE_MEMORY_BELOW_UTILIZATION,
        failure_detail={"device": "cuda:1", "free_gib": 19.77, "total_gpu_gib": 22.05,
                        "gpu_memory_utilization": 0.9, "requested_gib": 19.84}),
    "v0.19.0_planner_meta_llama_llama_3_1_8b_h100_tp1pp1dp1_16384.log": dict(
        vllm_version="0.19.0", engine="v1", model="meta-llama/Llama-3.1-8B-Instruct", tp_size=1,
        weights_gib=14.99, activation_gib=1.89, non_torch_gib=0.25, kv_cache_gib=58.11, kv_cache_tokens=476016,
        max_concurrency=29.05, concurrency_max_len=16384, max_model_len=16384, cudagraph_gib=0.91,
        total_gpu_gib=79.19, gpu_memory_utilization=0.95, failure=Failure.NONE, server_was_up=True,
        free_at_start_gib=78.68),
    "v0.19.0_planner_meta_llama_llama_3_1_8b_h100_tp2pp1dp1_8192.log": dict(
        vllm_version="0.19.0", tp_size=2, weights_gib=7.51, activation_gib=1.89, non_torch_gib=2.07,
        kv_cache_gib=63.76, kv_cache_tokens=1044688, max_concurrency=127.53, max_model_len=8192,
        cudagraph_gib=0.76, failure=Failure.NONE, server_was_up=True),
    "v0.19.0_planner_qwen_qwen2_5_7b_instruct_h100_tp1pp1dp1_8192.log": dict(
        model="Qwen/Qwen2.5-7B-Instruct", weights_gib=14.25, activation_gib=2.21, non_torch_gib=0.24,
        kv_cache_gib=58.53, kv_cache_tokens=1096000, max_concurrency=133.79, failure=Failure.NONE),
    "v0.19.0_planner_google_gemma_2_9b_it_h100_tp1pp1dp1_8192.log": dict(
        model="google/gemma-2-9b-it", weights_gib=17.22, activation_gib=3.65, non_torch_gib=0.25,
        kv_cache_gib=54.12, kv_cache_tokens=168880, max_concurrency=20.6, failure=Failure.NONE),
    "v0.19.0_planner_codellama_codellama_34b_h100_tp2pp1dp1_8192_FAILED.log": dict(
        model="codellama/CodeLlama-34b-hf", tp_size=2, failure=Failure.FREE_MEMORY_BELOW_UTILIZATION,
        failure_detail={"device": "cuda:1", "free_gib": 60.87, "total_gpu_gib": 79.19,
                        "gpu_memory_utilization": 0.95, "requested_gib": 75.23}),
}


# The other figures each log prints (checked against the log text), so that the whole report is pinned:
# a parser that invented or dropped a figure outside the headline ones above would otherwise still pass.
ALSO = {
    "v0.10.2_enginecore_qwen3_14b_kv.log": dict(max_model_len=32768, truncated=True),
    "v0.10.2_fp8_kv_healthy.log": dict(truncated=True),
    "v0.10.2_fp8_max_len_estimate.log": dict(engine="v1"),
    "v0.15_ci_ansi_caret_free_memory.log": dict(engine="v1", total_gpu_gib=22.05, gpu_memory_utilization=0.9),
    "v0.16_ci_free_memory_cuda1.log": dict(engine="v1", total_gpu_gib=22.05, gpu_memory_utilization=0.9),
    "v0.19.0_planner_codellama_codellama_34b_h100_tp2pp1dp1_8192_FAILED.log": dict(
        vllm_version="0.19.0", engine="v1", max_model_len=8192, total_gpu_gib=79.19, gpu_memory_utilization=0.95),
    "v0.19.0_planner_google_gemma_2_9b_it_h100_tp1pp1dp1_8192.log": dict(
        vllm_version="0.19.0", engine="v1", tp_size=1, concurrency_max_len=8192, cudagraph_gib=1.09,
        max_model_len=8192, total_gpu_gib=79.19, gpu_memory_utilization=0.95, server_was_up=True,
        free_at_start_gib=78.68),
    "v0.19.0_planner_meta_llama_llama_3_1_8b_h100_tp2pp1dp1_8192.log": dict(
        engine="v1", model="meta-llama/Llama-3.1-8B-Instruct", concurrency_max_len=8192, total_gpu_gib=79.19,
        gpu_memory_utilization=0.95, free_at_start_gib=77.66),
    "v0.19.0_planner_qwen_qwen2_5_7b_instruct_h100_tp1pp1dp1_8192.log": dict(
        vllm_version="0.19.0", engine="v1", tp_size=1, concurrency_max_len=8192, cudagraph_gib=0.87,
        max_model_len=8192, total_gpu_gib=79.19, gpu_memory_utilization=0.95, server_was_up=True,
        free_at_start_gib=78.68),
    "v0.6.3_h100_llama32_vision_truncated.log": dict(max_model_len=512),
    "v0.6.4_rtx3090_llama8b_29k_max_len.log": dict(concurrency_max_len=29000),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_real_log(name, data_dir):
    report = parse_startup_log((data_dir / "logs" / name).read_text(encoding="utf-8"))
    got = {key: getattr(report, key) for key in CASES[name]}
    assert got == CASES[name]
    whole = {k: v for k, v in report.to_dict().items() if k != "evidence"}
    empty = {k: v for k, v in StartupReport().to_dict().items() if k != "evidence"}
    expected = {**empty, **{k: (v.value if isinstance(v, Failure) else v) for k, v in CASES[name].items()},
                **ALSO.get(name, {})}
    assert whole == expected
    assert report.evidence, "every real log has at least one line of evidence"


def test_at_least_six_versions_covered():
    versions = {name.split("_")[0] for name in CASES}
    assert len(versions) >= 6, versions


def test_evidence_is_the_grep_lines(data_dir):
    report = parse_startup_log((data_dir / "logs" / "v0.6.4_rtx3090_llama8b_29k_max_len.log").read_text())
    assert [line.split()[0] for line in report.evidence] == ["Loading", "Memory", "#", "Maximum", "The"]


def test_interleaved_ranks_take_rank_zero_and_min_kv():
    text = (
        "(VllmWorker rank=1 pid=12) INFO 03-19 07:27:50 [gpu_model_runner.py:1] Model loading took 7.6000 GB "
        "and 3.0 seconds\n"
        "(VllmWorker rank=0 pid=11) INFO 03-19 07:27:50 [gpu_model_runner.py:1] Model loading took 7.5100 GB "
        "and 3.0 seconds\n"
        "(VllmWorker rank=1 pid=12) INFO 03-19 07:27:51 [gpu_worker.py:1] Available KV cache memory: 61.20 GiB\n"
        "(VllmWorker rank=0 pid=11) INFO 03-19 07:27:51 [gpu_worker.py:1] Available KV cache memory: 63.76 GiB\n"
    )
    report = parse_startup_log(text)
    assert (report.weights_gib, report.kv_cache_gib, report.engine) == (7.51, 61.2, "v1")


def test_truncated_mid_line_is_unknown_and_host_oom_from_status():
    text = "INFO 10-24 18:12:20 model_runner.py:1056] Starting to load model meta-llama/Llama-3.1-70B...\nLoadi"
    report = parse_startup_log(text)
    assert (report.failure, report.truncated, report.model) == (Failure.UNKNOWN, True, "meta-llama/Llama-3.1-70B")
    assert classify(report, exit_code=137) is Failure.HOST_OOM_KILLED
    assert classify(report, reason="OOMKilled") is Failure.HOST_OOM_KILLED
    assert classify(report, exit_code=137, reason="Error") is Failure.UNKNOWN
    assert classify(report, exit_code=1) is Failure.UNKNOWN


def test_pod_status_wins_over_a_healthy_log(data_dir):
    report = parse_startup_log((data_dir / "logs" / "v0.10.2_fp8_kv_healthy.log").read_text())
    assert report.failure is Failure.NONE
    assert classify(report, exit_code=137, reason="OOMKilled") is Failure.HOST_OOM_KILLED


def test_other_crash_is_unknown_with_the_error():
    text = ("(APIServer pid=1) INFO 04-22 01:47:15 [utils.py:1] non-default args: {'model': 'x'}\n"
            "(APIServer pid=1) OSError: [Errno 28] No space left on device: '/root/.cache/vllm/torch_compile_cache'\n"
            "(APIServer pid=1) RuntimeError: Engine core initialization failed. See root cause above.\n")
    report = parse_startup_log(text)
    assert report.failure is Failure.UNKNOWN
    assert report.failure_detail == {
        "error": "RuntimeError: Engine core initialization failed. See root cause above."}


def test_a_hub_the_pod_cannot_reach_is_the_model_unavailable_offline():
    """transformers' words when the config download cannot connect: the model is unavailable to this pod (no Hub,
    nothing cached), which no memory change helps."""
    text = ("(APIServer pid=1) INFO 04-22 01:47:15 [utils.py:1] non-default args: {'model': 'x'}\n"
            "(APIServer pid=1) OSError: We couldn't connect to 'https://huggingface.co' to load the files.\n"
            "(APIServer pid=1) RuntimeError: Engine core initialization failed. See root cause above.\n")
    report = parse_startup_log(text)
    assert report.failure is Failure.MODEL_UNAVAILABLE
    assert report.failure_detail["reason"] == "offline", report.failure_detail
