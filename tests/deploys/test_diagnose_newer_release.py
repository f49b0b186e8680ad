"""deploys/diagnose.py on a release newer than the newest modelled, through the real pyinfra CLI on the rehearsal
cluster: the startup-log line that classifies the crash says the rules it was judged by are extrapolated, as
`vllm-remedy diagnose --log`, budget, drift and the pod's own log say (a review found the deploy silent)."""

from __future__ import annotations

from typing import Any

from fixtures import pyinfra_run
from fixtures.pyinfra_run import Rehearsal, crash_heads
from fixtures.restore_world import (
    BAD_ARGS,
    DIAGNOSE,
    LOCAL,
    bad_revision,
    crash_looping,
    host_out,
    newest_revision,
    vllm_runtime,
    wait_until,
)

rehearsal = pyinfra_run.rehearsal


def newer_and_bad(dep: dict[str, Any], image: str) -> None:
    """The incident's bad revision (the model's 131072 default on an L4) on another vLLM image."""
    bad_revision(dep)
    dep["spec"]["template"]["spec"]["containers"][0]["image"] = image


def _startup_lines(rehearsal: Rehearsal, image: str) -> list[str]:
    vllm_runtime(rehearsal)
    bad = newest_revision(rehearsal) + 1
    rehearsal.change(lambda dep: newer_and_bad(dep, image), change_cause=f"{image}, model's default length")
    wait_until(lambda: crash_looping(rehearsal, revision=bad), what=f"revision {bad} to crash-loop")
    got = rehearsal.pyinfra(LOCAL, DIAGNOSE, "--dry")
    assert got.returncode == 0, got.stderr
    lines = host_out(got.stderr)
    heads = [line for line in crash_heads(lines) if "/vllm (" in line]
    assert heads, "\n".join(lines)
    return heads


def test_a_newer_release_says_its_rules_are_extrapolated_on_the_startup_line(rehearsal: Rehearsal) -> None:
    assert "--max-model-len" not in BAD_ARGS  # the premise: the model's 131072 tokens do not fit an L4
    heads = _startup_lines(rehearsal, "vllm/vllm-openai:v0.40.0")
    assert all(": max_len_exceeds_kv — model weights 15.06 GiB" in line for line in heads), heads
    assert all(line.endswith("(vLLM 0.40.0: rules extrapolated from 0.34.0)") for line in heads), heads


def test_a_modelled_release_says_nothing_of_its_rules(rehearsal: Rehearsal) -> None:
    heads = _startup_lines(rehearsal, "vllm/vllm-openai:v0.8.5")
    assert all("extrapolated" not in line and "rules" not in line for line in heads), heads
