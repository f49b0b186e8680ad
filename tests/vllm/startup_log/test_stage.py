"""The startup-stage parser on real vLLM logs (tests/data/logs/SOURCES.md, tests/data/logs/stages/SOURCES.md).

A log is read as a rollout wait reads it: cut after each line (what ``kubectl logs`` shows at that moment), and
each cut's stage is taken; the stages a start walks through must come out in order, with what each says.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_remedy.vllm.startup_log import render_startup_log
from vllm_remedy.vllm.startup_log.stage import (
    API,
    CRASHED,
    GRAPHS,
    LOADING,
    PROFILING,
    SERVING,
    STAGES,
    STARTING,
    StartupStage,
    furthest,
    startup_stage,
)

LOGS = Path(__file__).resolve().parents[2] / "data" / "logs"


def walk(text: str) -> list[str]:
    """The distinct stages (with details) a log shows as it grows line by line."""
    lines = text.splitlines(keepends=True)
    seen: list[str] = []
    for end in range(1, len(lines) + 1):
        now = str(startup_stage("".join(lines[:end])))
        if not seen or seen[-1] != now:
            seen.append(now)
    return seen


def stages_of(text: str) -> list[str]:
    out: list[str] = []
    for entry in walk(text):
        name = entry.split(" (", 1)[0]
        if not out or out[-1] != name:
            out.append(name)
    return out


def test_a_v019_start_walks_every_stage_in_order_with_what_each_line_says() -> None:
    text = (LOGS / "v0.19.0_planner_meta_llama_llama_3_1_8b_h100_tp1pp1dp1_16384.log").read_text()
    assert walk(text) == [
        "starting",
        "loading weights",
        "profiling (weights 14.99 GiB loaded)",
        "profiling (torch.compile)",
        "profiling (memory profiling)",
        # V1 prints nothing while it captures (tqdm's bar reaches the log when it closes): KV sized, not eager
        "capturing CUDA graphs (KV cache 476,016 tokens)",
        "capturing CUDA graphs (KV cache 476,016 tokens, 29.05x concurrency)",
        "starting API server (CUDA graphs captured)",
        "starting API server (engine initialised)",
        "serving",
    ]


@pytest.mark.parametrize("name", [
    "v0.19.0_planner_meta_llama_llama_3_1_8b_h100_tp2pp1dp1_8192.log",  # two ranks interleaved
    "v0.19.0_planner_google_gemma_2_9b_it_h100_tp1pp1dp1_8192.log",
    "v0.19.0_planner_qwen_qwen2_5_7b_instruct_h100_tp1pp1dp1_8192.log",
])
def test_every_healthy_v019_start_passes_the_stages_in_order(name: str) -> None:
    assert stages_of((LOGS / name).read_text()) == list(STAGES)


def test_v0_announces_its_capture_and_its_shard_bar_counts() -> None:
    text = (LOGS / "stages" / "v0.4_v0_shards_capture.log").read_text()
    assert walk(text) == [
        "loading weights (1/2 shards)",
        "loading weights (2/2 shards)",
        "profiling (weights 12.5523 GiB loaded)",
        "profiling (KV cache 4,109 blocks)",  # V0 says when it captures: until then it is sizing the cache
        "capturing CUDA graphs (KV cache 4,109 blocks)",
        "starting API server (CUDA graphs captured)",
    ]


def test_v066_capture_line_and_its_closed_bar() -> None:
    text = (LOGS / "stages" / "v0.6.6_v0_capture_bar.log").read_text()
    assert walk(text) == ["capturing CUDA graphs", "capturing CUDA graphs (35/35)",
                          "starting API server (CUDA graphs captured)"]


def test_a_v1_worker_reads_shards_then_loads_then_compiles() -> None:
    text = (LOGS / "stages" / "v1_worker_tp0_shards_compile.log").read_text()
    assert walk(text) == ["loading weights (5/9 shards)", "loading weights (6/9 shards)",
                          "loading weights (7/9 shards)", "loading weights (8/9 shards)",
                          "loading weights (9/9 shards)", "loading weights",
                          "profiling (weights 12.66 GiB loaded)", "profiling (torch.compile)"]


def test_v1_per_mode_capture_bar_counts_up() -> None:
    text = (LOGS / "stages" / "v0.11_v1_capture_bars.log").read_text()
    assert walk(text) == ["starting", "capturing CUDA graphs (0/67)", "capturing CUDA graphs (1/67)",
                          "capturing CUDA graphs (2/67)", "capturing CUDA graphs (3/67)"]


def test_v063_log_cut_at_capture_is_capturing() -> None:
    got = startup_stage((LOGS / "v0.6.3_h100_llama32_vision_truncated.log").read_text())
    assert got == StartupStage(GRAPHS, "KV cache 2,252 blocks, 70.38x concurrency")


@pytest.mark.parametrize(("name", "failure", "before"), [
    ("v0.6.4_rtx3090_llama8b_29k_max_len.log", "max_len_exceeds_kv", PROFILING),
    ("v0.8_v1_rtx5090_sampler_warmup_ranks.log", "sampler_warmup_oom", None),
    ("v0.9.1_l40s_free_memory.log", "free_memory_below_utilization", None),
    ("v0.11_create_weights_oom.log", "oom_loading_weights", None),
    ("v0.11.0_gpt_oss_h100_no_cache_blocks.log", "no_cache_blocks", None),
    ("v0.19.0_planner_codellama_codellama_34b_h100_tp2pp1dp1_8192_FAILED.log", "free_memory_below_utilization",
     STARTING),
    ("v0.7_compose_mistral_large_oom_under_load.log", "oom_under_load", None),
])
def test_a_fatal_error_is_crashed_with_the_classifiers_class(name: str, failure: str, before: str | None) -> None:
    text = (LOGS / name).read_text()
    assert startup_stage(text) == StartupStage(CRASHED, failure)
    assert startup_stage(text).failure == failure
    if before is not None:  # the stage it was in when it died, shown while it was still alive
        assert stages_of(text)[-2:] == [before, CRASHED]


def test_a_log_that_stops_mid_start_is_not_crashed() -> None:
    assert startup_stage((LOGS / "v0.8_v0_rtx3090_interleaved_ranks.log").read_text()).stage == PROFILING
    assert startup_stage("") == StartupStage(STARTING)


def test_enforce_eager_skips_capture_so_a_sized_cache_is_still_profiling() -> None:
    """No real eager log here: the rehearsal cluster's rendering of one (its config line says enforce_eager=True)."""
    figures = dict(model="meta-llama/Llama-3.1-8B-Instruct", weights_gib=15.06, kv_cache_gib=24.15,
                   kv_cache_tokens=197840, max_model_len=16384, total_gpu_gib=44.39)
    eager = render_startup_log("0.8.5", cudagraph_gib=None, enforce_eager=True, **figures)
    lines = eager.splitlines(keepends=True)
    sized = next(i for i, line in enumerate(lines) if "Maximum concurrency" in line)
    assert startup_stage("".join(lines[:sized + 1])) == StartupStage(
        PROFILING, "KV cache 197,840 tokens, 12.08x concurrency")
    assert stages_of(eager) == [STARTING, LOADING, PROFILING, SERVING]
    graphs = render_startup_log("0.8.5", cudagraph_gib=0.5, **figures)
    assert stages_of(graphs) == [STARTING, LOADING, PROFILING, GRAPHS, API, SERVING]


@pytest.mark.parametrize("version", ["0.6.3", "0.6.6", "0.7.3", "0.8.5", "0.10.2", "0.11.0", "0.19.0", "0.34.0"])
def test_the_rehearsal_clusters_logs_walk_the_same_stages(version: str) -> None:
    text = render_startup_log(version, model="m", weights_gib=15.0, kv_cache_gib=10.0, kv_cache_tokens=100000,
                              max_model_len=16384, cudagraph_gib=0.5, total_gpu_gib=44.39, tp_size=2)
    assert stages_of(text) == [STARTING, LOADING, PROFILING, GRAPHS, API, SERVING]


def test_a_tail_that_lost_the_stages_line_does_not_go_back() -> None:
    seen = StartupStage(GRAPHS, "KV cache 476,016 tokens")
    tail = startup_stage('(EngineCore pid=243) 2026-04-22 01:47:56,001 - INFO - autotuner.py:268 - flashinfer.jit: '
                         '[Autotuner]: Autotuning process ends\n')
    assert tail == StartupStage(STARTING)
    assert furthest(seen, tail) is seen
    assert furthest(seen, StartupStage(SERVING)) == StartupStage(SERVING)
    assert furthest(None, tail) is tail
