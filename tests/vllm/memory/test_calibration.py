"""The estimator against real startup logs (tests/data/calibration/*.yaml, each with its source URL)."""

from __future__ import annotations

import functools
import statistics
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from vllm_remedy.vllm.memory.calibration import (
    CAPTURE_KEYS,
    accuracy,
    capture_evidence,
    estimate_case,
    held_out,
    logged_start,
    older_release,
    outcome_right,
    source_group,
    wsl_evidence,
)
from vllm_remedy.vllm.memory.kv_margin import KV_ESTIMATE_MARGIN, KV_MARGIN_PERCENTILE, kv_margin
from vllm_remedy.vllm.outcomes import Outcome
from vllm_remedy.vllm.versions import rules

ALL_CASES = sorted((Path(__file__).resolve().parents[2] / "data" / "calibration").glob("*.yaml"))


@functools.cache
def _load(path: Path) -> dict[str, Any]:
    """One parse per case per worker, by libyaml where it is built (~140 cases are read at collection, every
    worker collects them all); the same safe loader's data either way. Callers must not change what it returns."""
    return yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


# Cases of releases older than any whose source was read are measured and reported apart (``older_release``); the
# bars below judge the releases the rules were read from.
OLDER = [p for p in ALL_CASES if older_release(_load(p))]
CASES = [p for p in ALL_CASES if p not in OLDER]


def test_older_release_cases_are_flagged_and_kept_out_of_the_held_out_figures():
    """Every output labels an older release's rules extrapolated (``VersionRules.provenance``), and none of its cases
    counts as held out, whatever its source."""
    assert len(OLDER) >= 4
    held = set(held_out((p.stem, _load(p)) for p in ALL_CASES))
    for path in OLDER:
        case = _load(path)
        assert rules(str(case["vllm_version"])).provenance.startswith("extrapolated from 0.5.5"), path.stem
        assert path.stem not in held


# Failed starts die before the KV cache is sized: they are checked on outcome only.
SIZED = [p for p in CASES if _load(p)["logged"].get("kv_cache_tokens")]
HELD_OUT = set(held_out((p.stem, _load(p)) for p in CASES))
IN_SAMPLE_SIZED = [p for p in SIZED if p.stem not in HELD_OUT]


def _errors(out_of_sample_only: bool = False, paths: list[Path] = CASES) -> list[float]:
    out = []
    for path in paths:
        case = _load(path)
        logged = case["logged"].get("kv_cache_tokens")
        if logged and not (out_of_sample_only and case["fit"]):
            out.append((estimate_case(case).kv_cache_tokens - logged) / logged)
    return out


def test_collection_is_broad_enough():
    cases = [_load(p) for p in CASES]
    assert len(cases) >= 30
    assert len({str(c["vllm_version"]) for c in cases}) >= 6
    assert len({c["gpu"] for c in cases}) >= 3
    assert all(c["source"].startswith("https://github.com/") for c in cases)
    outcomes = {c["logged"]["outcome"] for c in cases}
    assert {"fits", "max_len_exceeds_kv", "free_memory_below_utilization", "no_cache_blocks"} <= outcomes


# A case whose outcome class the estimator gets wrong says what is known of why in `known_outcome_miss`; it counts in
# every figure and must still be a miss (a fixed one rejoins the bar).
KNOWN_OUTCOME_MISS = [p for p in CASES if _load(p).get("known_outcome_miss")]


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_outcome_matches_log(path):
    """The start the product shows (``Estimate.start``, capture and KV-allocation OOMs included) against the start the
    log shows (``logged_start``): ``Estimate.outcome`` alone stays ``fits`` on a predicted capture OOM."""
    case = _load(path)
    right = outcome_right(case)
    assert right != (path in KNOWN_OUTCOME_MISS), (estimate_case(case).start, logged_start(case))


@pytest.mark.parametrize("path", ALL_CASES, ids=[p.stem for p in ALL_CASES])
def test_capture_key_is_what_the_excerpt_shows(path):
    """Every case states what its excerpt shows of the start after the KV cache, by the one written rule."""
    case = _load(path)
    assert case.get("capture") in CAPTURE_KEYS
    assert case["capture"] == capture_evidence(case.get("log_excerpt") or "")
    assert case["capture"] == "not_shown" or case["logged"]["outcome"] == "fits"


@pytest.mark.parametrize("path", ALL_CASES, ids=[p.stem for p in ALL_CASES])
def test_wsl_key_is_what_the_excerpt_shows(path):
    """A case runs under WSL (``wsl: true``, the capture spills to host memory) exactly when its excerpt shows vLLM's
    own "as WSL is detected" line."""
    case = _load(path)
    assert bool(case.get("wsl")) == wsl_evidence(case.get("log_excerpt") or "")


def test_a_capture_oom_predicted_on_a_finished_capture_is_a_miss():
    """The scoring compares the start shown: a case whose log shows the capture finished is no capture OOM, even
    though ``Estimate.outcome`` (vLLM's checks) is ``fits`` for both."""
    case = {**_load(CASES[0]), "capture": "finished", "logged": {"outcome": "fits"}}
    est = estimate_case(case)
    assert outcome_right(case, est) == (est.start == "fits")
    capture_oom = replace(est, outcome=Outcome.FITS, graph_capture_oom=True)
    assert not outcome_right(case, capture_oom)
    assert outcome_right({**case, "capture": "oom"}, capture_oom)
    assert not outcome_right({**case, "capture": "not_shown"}, capture_oom)  # a logged fit stands
    with pytest.raises(ValueError):
        logged_start({**case, "capture": None})


def test_capture_evidence_reads_vllms_lines_only():
    assert capture_evidence("INFO [gpu_model_runner.py:3480] Graph capturing finished in 19 secs, took 1.92 GiB") == (
        "finished")
    assert capture_evidence("Actual usage is 1.23 GiB ... and 0.0 GiB\nfor CUDAGraph memory.") == "finished"
    assert capture_evidence("INFO [kv_cache_utils.py:1087] GPU KV cache size: 100,752 tokens") == "not_shown"
    assert capture_evidence("|   0  NVIDIA L40S  |   45241MiB /  46068MiB |     95%      Default |") == "not_shown"
    oom = "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 40%\ntorch.OutOfMemoryError: CUDA out of memory."
    assert capture_evidence(oom) == "oom"


def test_known_outcome_misses_are_few_and_explained():
    # 1 -> 3 on 2026-12-06: the scoring now compares the start the product shows (capture OOM included), which
    # exposed two capture verdicts on starts whose logs show the capture finished, and a blind T4 exact fit missed.
    assert len(KNOWN_OUTCOME_MISS) <= 2
    assert all(len(_load(p)["known_outcome_miss"].split()) >= 20 for p in KNOWN_OUTCOME_MISS)


# A sized case the estimator over-predicts says what is known of why in `known_over` (the terms the log's own
# arithmetic points at, or that the cause is not identified); it stays in every figure (held-out error, margin) and
# is only spared the per-case bar below.
KNOWN_OVER = [p for p in SIZED if _load(p).get("known_over")]
BARRED = [p for p in SIZED if p not in KNOWN_OVER]


@pytest.mark.parametrize("path", BARRED, ids=[p.stem for p in BARRED])
def test_kv_tokens_never_more_than_logged(path):
    case = _load(path)
    logged = case["logged"]["kv_cache_tokens"]
    assert estimate_case(case).kv_cache_tokens <= logged * 1.005  # uncertain terms are rounded toward less KV


def test_known_over_predictions_are_few_explained_and_still_over():
    """The exemption is a marker, not a waiver: once the model is fixed the case must rejoin the bar above."""
    # Fifteen (bench/accuracy_notes/held_out_notes.md has each step): three from before the third blind batch (the
    # held-out L40S FP8 start of 2026-12-05b, now +2.1 % since the allocator's weight tails are charged, and two
    # in-sample starts at +1.0 %); ten measured by the blind batches of 2026-12-05c/d; three by 2026-12-05e (+8.0,
    # +3.2, +3.0 %); one by 2026-12-05f (+1.2 %); one where a source fix (Qwen VL pixel values in the model dtype) put
    # the compiled RTX 4080 Qwen2-VL start at +1.7 %. Out since: the V0 2 x A100 (+10.6 %), the T4 Qwen3-VL-Embedding
    # (+6.6 %) and the RTX 5090 Qwen3-4B bf16 (+0.6 %) cases, diagnosed from source; on 2026-12-06 the 48 GB RTX 4090
    # mnbt-512 (+4.2 %) and RTX 4090 Qwen2.5-0.5B 2k (+1.0 %) starts, by the cuBLAS-workspace pin rule (post hoc).
    # Then +1: the RTX 5090 Qwen3-4B 128k start (+0.5 %) once the card's total became the logged 31.36 GiB (an input);
    # -3: the L4 Qwen2.5-7B-AWQ u0.45 and RTX 5090 Qwen3-14B-AWQ 16k/32k starts, by the AWQ Marlin load replay.
    # Lower this as cases rejoin the bar; never raise it for a change of the model (the one exception, the
    # pixel-dtype fix, is said above).
    assert len(KNOWN_OVER) <= 11
    for path in KNOWN_OVER:
        case = _load(path)
        assert len(case["known_over"].split()) >= 20, path.stem
        assert estimate_case(case).kv_cache_tokens > case["logged"]["kv_cache_tokens"] * 1.005, path.stem


@pytest.mark.parametrize("path", IN_SAMPLE_SIZED, ids=[p.stem for p in IN_SAMPLE_SIZED])
def test_in_sample_kv_tokens_close(path):
    """Sources the constants were fitted on must be reproduced closely; held-out sources are judged below."""
    case = _load(path)
    logged = case["logged"]["kv_cache_tokens"]
    predicted = estimate_case(case).kv_cache_tokens
    # A case whose miss is understood says so in `known_gap`; it must still err toward less KV, within 15 %.
    assert abs(predicted - logged) / logged <= (0.15 if case.get("known_gap") else 0.10)


def test_known_gaps_are_few_and_explained():
    gaps = {p.stem: _load(p)["known_gap"] for p in CASES if _load(p).get("known_gap")}
    assert len(gaps) <= 2, gaps
    assert all(len(reason.split()) >= 20 for reason in gaps.values())


def test_median_error_within_3_percent():
    assert statistics.median(abs(e) for e in _errors()) <= 0.03


def test_every_case_says_which_fitted_terms_it_set():
    """``fit: []`` marks a case no constant was fitted on; the out-of-sample check relies on it."""
    for path in CASES:
        fit = _load(path)["fit"]
        assert isinstance(fit, list) and all(isinstance(t, str) for t in fit), path.stem


def test_out_of_sample_cases_meet_the_same_bars():
    """``fit: []`` cases of fitted sources (mostly the same H100 runs): close, but not the held-out figure."""
    errors = _errors(out_of_sample_only=True, paths=[p for p in CASES if p.stem not in HELD_OUT])
    assert len(errors) >= 15
    assert statistics.median(abs(e) for e in errors) <= 0.03
    assert max(abs(e) for e in errors) <= 0.10
    assert max(errors) <= 0.005


def test_held_out_split_is_by_source():
    """No held-out case shares a source (thread or log repository) with a case a constant was fitted on."""
    cases = {p.stem: _load(p) for p in CASES}
    fitted_sources = {source_group(c) for c in cases.values() if c["fit"]}
    assert HELD_OUT and all(source_group(cases[n]) not in fitted_sources for n in HELD_OUT)
    assert all(not cases[n]["fit"] for n in HELD_OUT)
    assert len({source_group(cases[n]) for n in HELD_OUT}) >= 12


def test_held_out_outcomes_right_and_over_predictions_only_the_known_ones():
    acc = accuracy(_load(p) for p in CASES if p.stem in HELD_OUT)
    # Target every one, MISSED by two since 2026-12-06 (the RTX 4080 LLaVA capture verdict, the blind T4 exact fit).
    assert acc.outcomes_right >= acc.cases - len([p for p in KNOWN_OUTCOME_MISS if p.stem in HELD_OUT])
    assert len(acc.errors) >= 22
    # Target 0, MISSED by one: the blind batch of 2026-12-05b brought an L40S 0.11.0 FP8 start predicted 4.1 % over
    # (known_over says what is known); the T4 0.17.1 AWQ one (+3.6 %) is -2.2 % since the cold-compile rule.
    assert acc.over <= len([p for p in KNOWN_OVER if p.stem in HELD_OUT])


def test_the_derived_margin_covers_every_held_out_over_prediction():
    """The planner trusts (1 - margin) x the predicted KV cache: no held-out log may hold less than that."""
    for path in SIZED:
        if path.stem in HELD_OUT:
            case = _load(path)
            trusted = estimate_case(case).kv_cache_tokens * (1 - KV_ESTIMATE_MARGIN)
            assert trusted <= case["logged"]["kv_cache_tokens"], path.stem


def test_held_out_error_does_not_regress():
    """Ratchet at today's held-out figures (129 cases, 116 sized): median 1.6 %, p90 6.7 % (both meet their targets,
    3 % and 10 %). The seventh blind batch (2026-12-05g/h, 6 cases; measured blind at outcome 5 of 6, median 3.3 %)
    moved p90 5.6 -> 6.7 % after the load split-limit rule had moved it 6.6 -> 5.6 %: a new measurement. The sixth
    blind batch (2026-12-05f, 13 cases) moved p90 7.8 -> 6.6 %: a new measurement; p90 was
    9.0 % before the post-hoc diagnoses of the 2026-12-05e over-predictions. The fifth blind
    batch (2026-12-05e, 11 held out) measured median 3.1 %, p90 5.6 % and moved the
    median 1.5 -> 1.6 %: a new measurement. Post hoc: the third and fourth blind batches measured median 8.5 / 2.2 %,
    p90 31.4 / 11.0 % before the rules taken from them (bench/accuracy_notes/held_out_notes.md). Earlier: 2.1 % /
    12.8 % on 52 cases; the second blind batch of 2026-12-05b (19 logs) measured median 2.9 %, p90 30.6 %. Lower
    these bounds as the model improves, never raise them for a change of the model; adding cases may move them
    either way: that is a new measurement, say so in the commit."""
    acc = accuracy(_load(p) for p in CASES if p.stem in HELD_OUT)
    assert acc.median_abs <= 0.017
    assert acc.p90_abs <= 0.067


def test_safety_margin_is_derived_from_the_held_out_errors():
    """kv_margin.KV_ESTIMATE_MARGIN must equal what kv_margin computes from today's held-out cases."""
    acc = accuracy(_load(p) for p in CASES if p.stem in HELD_OUT)
    assert kv_margin(acc.errors, KV_MARGIN_PERCENTILE) == KV_ESTIMATE_MARGIN, "update kv_margin.KV_ESTIMATE_MARGIN"


def test_kv_margin_covers_the_percentile():
    # +18 % over-prediction needs 0.18 / 1.18 = 15.3 % off -> 0.16; the nearest rank never interpolates down.
    assert kv_margin([0.18]) == 0.16
    # The median |error| is 0.02, but a known +3 % over-prediction needs 0.03 / 1.03 = 2.9 % off -> 0.03.
    assert kv_margin([-0.01, -0.02, 0.03, -0.25], pct=50) == 0.03
    assert kv_margin([-0.01, -0.02, -0.03, 0.12], pct=50) == 0.11  # 0.12 / 1.12, far above the percentile's 0.02
    assert kv_margin([-0.01, -0.02, -0.03, -0.25], pct=50) == 0.02  # no over-prediction: the percentile alone
    assert kv_margin([-0.01, -0.02, 0.03, -0.25], pct=90) == 0.2  # 0.25 / 1.25
    with pytest.raises(ValueError):
        kv_margin([])


def test_source_group_names_the_thread_or_repository():
    assert source_group({"source": "https://github.com/vllm-project/vllm/issues/10517"}) == "vllm-project/vllm#10517"
    assert source_group({"source": "https://github.com/a/b/blob/abc/log/x.log"}) == "a/b"
    assert source_group({"source": "https://github.com/a/b/issues/1", "holdout_group": "g"}) == "g"
