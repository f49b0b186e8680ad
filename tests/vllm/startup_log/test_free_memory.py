"""vLLM's own free-memory line, read from real logs (sources in tests/data/logs/SOURCES.md): what else held the GPU."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_remedy.vllm.outcomes import Failure
from vllm_remedy.vllm.startup_log import parse_startup_log
from vllm_remedy.vllm.startup_log.free_memory import StartupFree, startup_free

LOGS = Path(__file__).resolve().parents[2] / "data" / "logs"

# file → (free, total, utilization, requested, device, refused)
CASES = {
    "v0.9.1_l40s_free_memory.log": (31.44, 47.38, 0.95, 45.01, None, True),
    "v0.9.2_kvcached_free_memory.log": (59.32, 79.15, 0.9, 71.24, None, True),
    "v0.15_ci_ansi_caret_free_memory.log": (1.54, 22.05, 0.9, 19.84, "cuda:0", True),
    "v0.16_ci_free_memory_cuda1.log": (19.77, 22.05, 0.9, 19.84, "cuda:1", True),
    "v0.19.0_planner_codellama_codellama_34b_h100_tp2pp1dp1_8192_FAILED.log": (60.87, 79.19, 0.95, 75.23, "cuda:1",
                                                                              True),
    # A start that passed: the DEBUG advisory after graph capture carries the same snapshot.
    "v0.19.0_planner_meta_llama_llama_3_1_8b_h100_tp1pp1dp1_16384.log": (78.68, 79.19, 0.95, 75.23, None, False),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_real_logs_give_the_snapshot_vllm_printed(name: str) -> None:
    report = parse_startup_log((LOGS / name).read_text())
    free, total, util, requested, device, refused = CASES[name]
    got = startup_free(report)
    assert got is not None
    assert (got.free_gib, got.total_gib, got.utilization, got.device, got.refused) == (free, total, util, device,
                                                                                      refused)
    assert got.requested_gib == pytest.approx(requested, abs=0.01)
    assert (report.failure is Failure.FREE_MEMORY_BELOW_UTILIZATION) is refused
    assert startup_free(report.to_dict()) == got  # the fact's plain dict reads the same


def test_held_memory_is_total_minus_free_and_the_refusal_says_how_short() -> None:
    got = startup_free(parse_startup_log((LOGS / "v0.9.1_l40s_free_memory.log").read_text()))
    assert got is not None
    assert got.held_gib == pytest.approx(15.94)
    assert got.short_gib == pytest.approx(13.57)
    assert got.describe() == ("the GPU had 31.44 of 47.38 GiB free at startup: 15.94 GiB in use before vLLM loaded "
                              "anything (its own CUDA context included); it asks for 0.95 × 47.38 = 45.01 GiB, "
                              "13.57 GiB short")


def test_a_healthy_start_shows_only_its_own_context_in_use() -> None:
    got = startup_free(parse_startup_log(
        (LOGS / "v0.19.0_planner_meta_llama_llama_3_1_8b_h100_tp1pp1dp1_16384.log").read_text()))
    assert got is not None and got.short_gib is None
    assert got.held_gib == pytest.approx(0.51)


@pytest.mark.parametrize("name", ["v0.10.2_fp8_kv_healthy.log", "v0.6.4_rtx3090_llama8b_29k_max_len.log"])
def test_logs_without_the_line_say_nothing(name: str) -> None:
    assert startup_free(parse_startup_log((LOGS / name).read_text())) is None
    assert startup_free(None) is None


def test_the_refusal_is_not_mistaken_for_the_advisory() -> None:
    text = ("ValueError: Free memory on device (31.44/47.38 GiB) on startup is less than desired GPU memory "
            "utilization (0.95, 45.01 GiB). Decrease GPU memory utilization or reduce GPU memory used by other "
            "processes.")
    report = parse_startup_log(text)
    assert report.free_at_start_gib is None
    assert startup_free(report) == StartupFree(31.44, 47.38, 0.95, 45.01, None, True)
