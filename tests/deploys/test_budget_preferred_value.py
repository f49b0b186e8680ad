"""A flag outside the policy's bounds goes back to the policy's ``preferred`` value when that is predicted to fit, not
to the bound nearest the running value with the context cut to make it fit (hostile15b F11).

The runbook's unit with ``--gpu-memory-utilization 0.35`` (outside llama-8b's [0.8, 0.92], preferred 0.90) dies
``no_cache_blocks``. Before, budget wrote ``--max-model-len 14848 --gpu-memory-utilization 0.8`` (the minimum, then the
longest length that fit there): a unit drift reports as no known-good unit, and prompts of 14k-16k tokens refused.
Now it writes ``--gpu-memory-utilization 0.9`` alone: 16384 kept, the policy's known-good unit, drift in sync (real
pyinfra CLI and drift CLI, rehearsal cluster, ``--dry`` then ``-y``, and the prompt)."""

from __future__ import annotations

import pytest

from fixtures import pyinfra_run
from fixtures.budget_world import BUDGET, GOOD_ARGS, L40S_KV, args_of, deployment, prompted_run, rolled_out
from fixtures.drift_world import as_json, inventory
from fixtures.dry_run import diffs, dry_then_apply
from fixtures.pyinfra_run import ROOT, Rehearsal
from fixtures.restore_world import crash_looping, host_out, vllm_runtime, wait_until

rehearsal = pyinfra_run.rehearsal

UTIL = GOOD_ARGS.index("--gpu-memory-utilization") + 1
STARVED = [*GOOD_ARGS[:UTIL], "0.35", *GOOD_ARGS[UTIL + 1:]]
SUMMARY = "budget deployment llm/llama-8b: --gpu-memory-utilization 0.9 (gpu-memory-utilization, rung 1 of 1)"
REASON = ("gpu-memory-utilization: gpu-memory-utilization 0.35→0.9 (KV 24.15 GiB, 3.48 GiB left free); keeps "
          "max-model-len 16,384; max concurrency 12.08x ≥ 10.00x needed (the policy's preferred "
          "--gpu-memory-utilization, back inside its bounds)")


def starved(rehearsal: Rehearsal) -> str:
    """The unit at utilization 0.35: its surge pod crash-loops (no_cache_blocks) beside revision 14's. The inventory
    (policies/llama-8b.yaml, the kubeconfig in host data, as drift and a CronJob read it)."""
    vllm_runtime(rehearsal)

    def util(dep: dict) -> None:
        dep["spec"]["template"]["spec"]["containers"][0]["args"] = list(STARVED)
    rehearsal.change(util, change_cause="gpu-memory-utilization 0.35")
    wait_until(lambda: crash_looping(rehearsal, count=1), what="the 0.35 pod to crash-loop")
    return inventory(rehearsal.tmp, rehearsal.kubeconfig, str(ROOT / "policies" / "llama-8b.yaml"))


@pytest.mark.parametrize("prompt", [False, True], ids=["dry-then-y", "prompt"])
def test_budget_brings_utilization_to_the_preferred_value_and_keeps_the_context(rehearsal: Rehearsal, prompt: bool,
                                                                                cli) -> None:
    inv = starved(rehearsal)
    if prompt:
        got = prompted_run(rehearsal, BUDGET, lambda: None, inventory=inv)
        assert len(diffs(got.stderr)) == 1, got.stderr
    else:
        dry, got = dry_then_apply(rehearsal, inv, BUDGET, expect_diffs=1)
        shown = host_out(dry.stderr)
        assert dry.returncode == 0, dry.stderr
        assert "problem: observed no_cache_blocks (predicted the same); gpu-memory-utilization 0.35 is outside " \
               "[0.8, 0.92]" in shown, shown
        assert f"{SUMMARY}" in shown and "-    - '0.35'" in shown and "+    - '0.9'" in shown, shown
        assert not [line for line in shown if "14848" in line or "max-model-len 1" in line.split(":", 1)[0]], shown
    assert got.returncode == 0, got.stderr
    lines = host_out(got.stderr)
    assert any(line.startswith(f"{SUMMARY}: written (resourceVersion ") for line in lines), lines
    assert L40S_KV in lines, lines  # the known-good unit's own prediction: 197,840 tokens, 12.08x at 16384
    after = rolled_out(rehearsal)
    assert args_of(after) == [*GOOD_ARGS[:UTIL], "0.9", *GOOD_ARGS[UTIL + 1:]]
    assert after["metadata"]["annotations"]["vllm-remedy.io/last-action-reason"] == REASON

    # the result is the policy's known-good unit: drift finds nothing to change
    doc = as_json(cli("drift", "-i", inv, "-o", "json"))
    host = doc["hosts"][0]
    assert (host["status"], host["drifted"]) == ("InSync", []), host
    assert next(c for c in host["checks"] if c["check"] == "known-good-unit")["status"] == "pass", host
    assert deployment(rehearsal)["metadata"]["generation"] == after["metadata"]["generation"]
