"""vLLM's post-start advisory ("Actual usage is … --kv-cache-memory=…"), read from real log lines."""

from __future__ import annotations

from pathlib import Path

from vllm_remedy.vllm.startup_log.parse import KvAdvice, parse_kv_advice

LOGS = Path(__file__).resolve().parents[2] / "data" / "logs"

# 2026 form (weights and non-torch printed as one sum), from https://github.com/wtdcode/vllm-backport/issues/34
# (turn 4, 8x RTX 3090 with PP 2 x TP 4; a backport build printing upstream's gpu_worker.py line).
CONSUMED_FORM = (
    "(Worker_PP1_TP3 pid=4365) INFO 08-31 15:25:55 [gpu_worker.py:805] Free memory on device (22.93/23.56 GiB) on "
    "startup. Desired GPU memory utilization is (0.935, 22.03 GiB). Actual usage is 19.47 GiB for consumed memory "
    "(weights + non-torch), 0.6 GiB for peak activation, and 0.1 GiB for CUDAGraph memory. Replace "
    "gpu_memory_utilization config with `--kv-cache-memory=1828800984` (1.7 GiB) to fit into requested memory, or "
    "`--kv-cache-memory=2798683648` (2.61 GiB) to fully utilize gpu memory. Current kv cache memory in use is "
    "1.95 GiB."
)


def test_v0_19_advisory_per_rank():
    """llm-d-planner 0.19.0 run, Llama-3.1-8B TP 2 on H100: both ranks print it (DEBUG)."""
    advice = parse_kv_advice((LOGS / "v0.19.0_planner_meta_llama_llama_3_1_8b_h100_tp2pp1dp1_8192.log").read_text())
    assert [a.rank for a in advice] == [0, 1]
    assert advice[0] == KvAdvice(
        rank=0,
        free_gib=77.66,
        total_gib=79.19,
        utilization=0.95,
        requested_gib=75.23,
        consumed_gib=9.58,
        activation_gib=1.89,
        cudagraph_gib=0.76,
        fit_bytes=67487618048,
        full_bytes=70093952000,
        in_use_gib=63.76,
        weights_gib=7.51,
        non_torch_gib=2.07,
    )
    # The advice is the budget with graphs subtracted: requested - weights - non-torch - activation - graphs.
    a = advice[0]
    assert abs(a.fit_bytes / 2**30 - (a.requested_gib - a.consumed_gib - a.activation_gib - a.cudagraph_gib)) < 0.2


def test_2026_consumed_form():
    (a,) = parse_kv_advice(CONSUMED_FORM)
    assert (a.rank, a.consumed_gib, a.activation_gib, a.cudagraph_gib) == (3, 19.47, 0.6, 0.1)
    assert (a.weights_gib, a.non_torch_gib) == (None, None)
    assert (a.fit_bytes, a.full_bytes, a.in_use_gib, a.utilization) == (1828800984, 2798683648, 1.95, 0.935)


def test_absent_or_cut_line_gives_nothing():
    assert parse_kv_advice((LOGS / "v0.10.2_fp8_kv_healthy.log").read_text()) == []
    assert parse_kv_advice(CONSUMED_FORM[: CONSUMED_FORM.index(" Current kv cache")]) == []
