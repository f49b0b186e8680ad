"""check_flags (what drift and budget ask), flag value parsing and durations."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vllm_remedy.policy import (
    FractionBounds,
    IntBounds,
    Policy,
    Violation,
    canonical_flag,
    format_duration,
    parse_duration,
    parse_flag_int,
)

POLICY = Policy.from_mapping({
    "flags": {
        "max-model-len": {"min": 4096, "max": 16384, "preferred": 16384},
        "gpu-memory-utilization": {"min": 0.8, "max": 0.92},
        "max-num-seqs": {"max": 128},
        "kv-cache-dtype": {"allowed": ["auto", "fp8"]},
    },
    "kv_cache_fp8": {"status": "allowed", "evaluated": "2025-05 gsm8k within 0.3 points, on-call team"},
}, "inline.yaml")
FORBIDS_FP8 = Policy.from_mapping({"require_explicit_max_model_len": False}, "inline.yaml")


def test_compliant_flags_have_no_violations() -> None:
    assert POLICY.check_flags({"max-model-len": "16384", "gpu-memory-utilization": "0.9", "max-num-seqs": "64",
                               "kv-cache-dtype": "fp8", "port": "8000", "enforce-eager": "true"}) == []


def test_each_broken_rule_is_one_violation_in_flag_order() -> None:
    got = POLICY.check_flags({"max_num_seqs": "256", "--gpu-memory-utilization": "0.95", "kv-cache-dtype": "fp8_e5m2"})
    assert got == [
        Violation("max-model-len", None, "an explicit value (never the model's default)"),
        Violation("gpu-memory-utilization", "0.95", "a number in [0.8, 0.92]"),
        Violation("max-num-seqs", "256", "an integer ≤ 128"),
        Violation("kv-cache-dtype", "fp8_e5m2", "one of auto, fp8"),
    ]
    assert [str(v) for v in got] == [
        "--max-model-len is not set: expected an explicit value (never the model's default)",
        "--gpu-memory-utilization=0.95: expected a number in [0.8, 0.92]",
        "--max-num-seqs=256: expected an integer ≤ 128",
        "--kv-cache-dtype=fp8_e5m2: expected one of auto, fp8",
    ]


@pytest.mark.parametrize(("value", "expected"), [
    ("131072", "an integer in [4096, 16384]"),
    ("2048", "an integer in [4096, 16384]"),
    ("auto", "an integer in [4096, 16384] (not a literal integer)"),
    ("-1", "an integer in [4096, 16384] (a negative integer: vLLM reads --max-model-len -1 as auto-fit from 0.14.0, "
           "a length it picks at start, which no bound can judge)"),  # a literal (config/model.py@0.14.0 l.175)
    ("$(MAX_LEN)", "an integer in [4096, 16384] (not a literal integer)"),
    ("16Ki", "an integer in [4096, 16384] (not a literal integer)"),  # no vLLM release reads Ki (review H6)
    ("17K", "an integer in [4096, 16384]"),  # 17408: K is 1024 in every release's human_readable_int
    ("17k", "an integer in [4096, 16384]"),  # 17000
])
def test_max_model_len_values_out_of_bounds(value: str, expected: str) -> None:
    assert POLICY.check_flags({"max-model-len": value}) == [Violation("max-model-len", value, expected)]


@pytest.mark.parametrize("value", ["16384", "16K", "16k", "4096", " 8192 "])
def test_max_model_len_values_within_bounds(value: str) -> None:
    assert POLICY.check_flags({"max-model-len": value}) == []


def test_fp8_is_refused_when_policy_forbids_it_even_without_bounds() -> None:
    assert FORBIDS_FP8.check_flags({"kv-cache-dtype": "fp8_e4m3"}) == [
        Violation("kv-cache-dtype", "fp8_e4m3", "not fp8 (kv_cache_fp8 is forbidden by policy)")]
    assert FORBIDS_FP8.check_flags({"kv-cache-dtype": "auto"}) == []
    assert FORBIDS_FP8.check_flags({}) == []  # explicit max-model-len not required by this policy


def test_unbounded_flag_has_no_bounds() -> None:
    assert POLICY.flag_bounds("max-num-batched-tokens") is None
    assert POLICY.flag_bounds("served-model-name") is None
    assert POLICY.flag_bounds("--max_model_len") == IntBounds(min=4096, max=16384, preferred=16384)


@pytest.mark.parametrize(("text", "seconds"), [
    ("30m", 1800), ("2h", 7200), ("1h30m", 5400), ("90s", 90), ("1d", 86400), ("1d2h3m4s", 93784), (" 45m ", 2700),
])
def test_parse_duration(text: str, seconds: int) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "2", "h", "2x", "-1h", "0s", "0h0m", "1.5h", "30m2h", "1h1h", "2 h", "2H", "P1D"])
def test_parse_duration_rejects_nonsense(text: str) -> None:
    with pytest.raises(ValueError, match="not a duration"):
        parse_duration(text)


@given(st.integers(min_value=1, max_value=30 * 86400))
def test_format_then_parse_duration_round_trips(seconds: int) -> None:
    assert parse_duration(format_duration(seconds)) == seconds


@pytest.mark.parametrize(("text", "number"), [
    ("16384", 16384), ("16k", 16000), ("25.6k", 25600), ("16K", 16384), ("1M", 1048576),
    ("auto", None), ("1.5", None), ("1.5K", None), ("16Ki", None), ("1Mi", None), ("", None), ("0x10", None),
])
def test_parse_flag_int(text: str, number: int | None) -> None:
    assert parse_flag_int(text) == number


bounds_ints = st.one_of(st.none(), st.integers(min_value=1, max_value=10**6))


@given(lo=bounds_ints, hi=bounds_ints, value=st.integers(min_value=1, max_value=2 * 10**6))
def test_int_bounds_check_agrees_with_arithmetic(lo: int | None, hi: int | None, value: int) -> None:
    if lo is not None and hi is not None and lo > hi:
        lo, hi = hi, lo
    bounds = IntBounds(min=lo, max=hi)
    inside = (lo is None or value >= lo) and (hi is None or value <= hi)
    assert (bounds.check(str(value)) is None) == inside
    policy = Policy.from_mapping({"flags": {"max-num-seqs": {"min": lo, "max": hi}}}, "h.yaml")
    got = policy.check_flags({"max-model-len": "8192", "max-num-seqs": str(value)})
    assert got == ([] if inside else [Violation("max-num-seqs", str(value), bounds.describe())])


@given(value=st.floats(min_value=-1, max_value=2, allow_nan=False))
def test_fraction_bounds_default_to_open_zero_closed_one(value: float) -> None:
    assert (FractionBounds().check(repr(value)) is None) == (0 < value <= 1)


def test_flag_spellings_resolve_like_vllm_argparse() -> None:
    """Aliases and unique prefixes name the same flag in policies as on the command line (one resolver)."""
    got = POLICY.check_flags({"max-model-len": "16384", "max-num-seq": "256", "--gpu_memory_util": "0.5"})
    assert got == [Violation("gpu-memory-utilization", "0.5", "a number in [0.8, 0.92]"),
                   Violation("max-num-seqs", "256", "an integer ≤ 128")]
    assert (canonical_flag("tp"), canonical_flag("-tp"), canonical_flag("--max_num_seq")) == (
        "tensor-parallel-size", "tensor-parallel-size", "max-num-seqs")
    assert POLICY.flag_bounds("--max_model_len") == IntBounds(min=4096, max=16384, preferred=16384)
