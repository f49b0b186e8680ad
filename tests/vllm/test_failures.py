"""The failure registry is complete and agrees with the classifier, the sim's renderer and the CLI.

A new class is meant to touch only the registry, the log matcher and the renderer: these checks say
which of the three was forgotten.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pytest

from vllm_remedy.commands import diagnose
from vllm_remedy.vllm.failures import ERROR_KINDS, FAILURES, OOM_PHASES, failure_class
from vllm_remedy.vllm.log_formats import TEMPLATES
from vllm_remedy.vllm.outcomes import Failure
from vllm_remedy.vllm.startup_log import classify, parse_startup_log, render_startup_log
from vllm_remedy.vllm.startup_log.failure import _PHASES

RUNBOOK = Path(__file__).resolve().parents[2] / "docs" / "runbook.md"
# One version per engine / error-message era: every class renders in at least one of them.
VERSIONS = ("0.6.3", "0.8.5", "0.10.2", "0.22.0", "0.34.0")
BASE = dict(model="meta-llama/Llama-3.1-8B-Instruct", weights_gib=7.51, kv_cache_gib=63.76,
            kv_cache_tokens=1044688, gpu_blocks=65293, max_concurrency=127.53, max_model_len=8192,
            cudagraph_gib=0.76, total_gpu_gib=79.19, gpu_memory_utilization=0.95, activation_gib=1.89,
            non_torch_gib=2.07)
DETAIL = {"needed_gib": 95.64, "available_gib": 63.76, "suggested_max_model_len": 5632, "free_gib": 60.87,
          "requested_gib": 75.23, "tried_to_allocate_gib": 1.74, "num_dummy_requests": 1024}


def test_every_failure_has_an_entry_named_as_the_enum():
    assert list(FAILURES) == list(Failure)
    for failure, entry in FAILURES.items():
        assert entry.failure is failure and entry.name == failure.value
        assert entry.headline and entry.hint and entry.phase in ("start", "load")


def test_steps_are_the_runbooks():
    steps = {int(n) for n in re.findall(r"^## Step (\d+):", RUNBOOK.read_text(encoding="utf-8"), re.M)}
    assert {entry.step for entry in FAILURES.values()} <= steps


def test_matcher_vocabulary_exists():
    """Error kinds are log_formats messages, OOM phases the classifier's traceback phases."""
    assert set(ERROR_KINDS) <= {t.kind for t in TEMPLATES}
    assert set(OOM_PHASES) <= {name for name, _ in _PHASES}


def test_unknown_values_read_as_unknown():
    assert failure_class("no_such_class") is FAILURES[Failure.UNKNOWN]
    assert failure_class("oom_under_load") is FAILURES[Failure.OOM_UNDER_LOAD]


def _renders(failure: Failure) -> list[tuple[str, str]]:
    out = []
    for version in VERSIONS:
        try:
            out.append((version, render_startup_log(version, failure=failure, failure_detail=DETAIL, **BASE)))
        except ValueError:  # this version has no message for this class
            continue
    return out


# The renderer's "unknown" is a traceback after the server came up with no engine-death line, which the
# classifier reads as a healthy start; kept as found (behaviour unchanged), strict so a fix is noticed.
_DISAGREE = {Failure.UNKNOWN: "rendered unknown (error after the server is up) classifies as none"}


@pytest.mark.parametrize("failure", [pytest.param(f, marks=pytest.mark.xfail(strict=True, reason=_DISAGREE[f]))
                                     if f in _DISAGREE else f for f in Failure], ids=str)
def test_render_classify_round_trip(failure):
    entry = FAILURES[failure]
    renders = _renders(failure)
    assert renders, f"no version renders {failure}"
    # Only the pod status shows a host OOM kill: the log is cut off, as the kernel leaves it.
    status = {"exit_code": 137, "reason": "OOMKilled"} if entry.host_memory else {}
    for version, text in renders:
        report = parse_startup_log(text)
        report.failure = classify(report, **status)
        assert report.failure is failure, version
        assert diagnose.render_text(report).splitlines()[0] == f"{failure.value}: {entry.headline}"
        assert diagnose.hint(report) == entry.hint_for(report.failure_detail)
        assert diagnose.hint(report).startswith(f"step {entry.step}: ")


def test_cli_json_carries_the_registry_hint(tmp_path, capsys):
    log = tmp_path / "previous.log"
    log.write_text(render_startup_log("0.10.2", failure=Failure.MAX_LEN_EXCEEDS_KV, failure_detail=DETAIL, **BASE))
    args = argparse.Namespace(log=str(log), exit_code=None, reason=None, output="json")
    assert diagnose.run(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["failure"] == "max_len_exceeds_kv"
    assert out["hint"] == "step 4: set an explicit --max-model-len ≤ 5632 (or give the KV cache more memory)"


def test_a_profile_oom_is_a_class_of_its_own_answered_by_a_smaller_profile():
    """The profiling forward's OOM (before any KV check) has its own entry, traceback phase and quantity: not
    ``unknown``, and no hint to raise the utilization, which sizes only the KV cache after the profile."""
    entry = failure_class("profile_oom")
    assert entry.failure is Failure.PROFILE_OOM and OOM_PHASES["profiling"] is Failure.PROFILE_OOM
    assert entry.step == 4 and entry.short_of == "profile_room" and entry.phase == "start"
    assert "--max-num-batched-tokens" in entry.hint and "raising --gpu-memory-utilization does not help" in entry.hint
    assert [v for v, _ in _renders(Failure.PROFILE_OOM)] == list(VERSIONS)  # every engine and runner renders it
