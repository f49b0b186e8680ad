"""On a full GPU pool (one replica per GPU node, every GPU taken, the default RollingUpdate 25 % / 25 %) the budget's
rung and the eager toggle switch the rollout to maxSurge 0 / maxUnavailable 1 in the same guarded write, as the pin
does, and say so in the dry run. Before, the flag change was written and its surge pod stayed Pending forever:
maxSurge rounds up to 1, maxUnavailable down to 0, so Kubernetes' rolling update never scales an old pod down
(real pyinfra CLI, rehearsal cluster, ``-y`` and the prompt)."""

from __future__ import annotations

from typing import Any

import pytest

from fixtures import pyinfra_run
from fixtures.budget_world import (
    BUDGET,
    EAGER,
    GOOD_ARGS,
    LOCAL,
    MODEL,
    PIN,
    args_of,
    deployment,
    live_pods,
    prompted_run,
    quiet,
    rolled_out,
    with_args,
)
from fixtures.dry_run import diffs, dry_then_apply
from fixtures.pyinfra_run import Rehearsal
from fixtures.restore_world import RESTORE, host_out, vllm_runtime, wait_until

rehearsal = pyinfra_run.rehearsal

IMPLICIT = [MODEL, "--gpu-memory-utilization", "0.90", "--max-num-seqs", "64"]
DEFAULT = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}}
SWITCHED = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}
LINE = ("strategy: RollingUpdate maxSurge 25%, maxUnavailable 25% -> RollingUpdate maxSurge 0, maxUnavailable 1: "
        "no free NVIDIA-L40S GPU for a surge pod, so pods are replaced one at a time")
REASON = "maxSurge 0 / maxUnavailable 1: no free GPU for a surge pod"


def full_pool(rehearsal: Rehearsal, args: list[str]) -> dict[str, Any]:
    """Three replicas on the three L40S nodes (every L40S GPU held by our pods), then the default strategy."""
    vllm_runtime(rehearsal)

    def three(dep: dict[str, Any]) -> None:
        dep["spec"]["replicas"] = 3
        dep["spec"]["strategy"] = dict(SWITCHED)  # only to get there: one pod at a time
        dep["spec"]["template"]["spec"]["containers"][0]["args"] = list(args)

    rehearsal.change(three, change_cause="3 replicas, one per L40S node")
    rolled_out(rehearsal)
    rehearsal.change(lambda d: d["spec"].update(strategy=dict(DEFAULT)))
    before = quiet(rehearsal)
    assert len(live_pods(rehearsal)) == 3 and before["spec"]["strategy"] == DEFAULT
    return before


def assert_switched(rehearsal: Rehearsal, shown: list[str]) -> dict[str, Any]:
    """The strategy's diff and why were shown; the rollout finished, one pod at a time."""
    for line in ("--- deployment llm/llama-8b strategy (current)", '-    maxSurge: 25%', "+    maxSurge: 0",
                 '-    maxUnavailable: 25%', "+    maxUnavailable: 1", LINE):
        assert line in shown, (line, shown)
    after = rolled_out(rehearsal)
    assert after["spec"]["strategy"] == SWITCHED
    assert after["metadata"]["annotations"]["kubernetes.io/change-cause"].endswith(f"; {REASON}")
    assert len(live_pods(rehearsal)) == 3
    return after


@pytest.mark.parametrize("prompt", [False, True], ids=["dry-then-y", "prompt"])
def test_budget_switches_to_max_surge_zero_on_a_full_pool(rehearsal: Rehearsal, prompt: bool) -> None:
    full_pool(rehearsal, IMPLICIT)
    if prompt:
        got = prompted_run(rehearsal, BUDGET, lambda: None)
        assert len(diffs(got.stderr)) == 2, got.stderr  # the template's and the strategy's, at the prompt
    else:
        _dry, got = dry_then_apply(rehearsal, LOCAL, BUDGET, expect_diffs=2)
    assert got.returncode == 0, got.stderr
    shown = host_out(got.stderr)
    assert any(line.startswith("budget deployment llm/llama-8b: --max-model-len 16384 (max-model-len, rung 1 of 1)"
                               ": written") for line in shown), shown
    after = assert_switched(rehearsal, shown)
    assert args_of(after) == [*IMPLICIT, "--max-model-len", "16384"]


@pytest.mark.parametrize("prompt", [False, True], ids=["dry-then-y", "prompt"])
def test_the_eager_toggle_switches_to_max_surge_zero_on_a_full_pool(rehearsal: Rehearsal, prompt: bool) -> None:
    full_pool(rehearsal, GOOD_ARGS)
    if prompt:
        got = prompted_run(rehearsal, EAGER, lambda: None)
        assert len(diffs(got.stderr)) == 2, got.stderr
    else:
        _dry, got = dry_then_apply(rehearsal, LOCAL, EAGER, expect_diffs=2)
    assert got.returncode == 0, got.stderr
    after = assert_switched(rehearsal, host_out(got.stderr))
    assert args_of(after) == [*GOOD_ARGS, "--enforce-eager"]
    # the switch stays (confirm records it with a known-good mark, as the pin's): turning eager off rolls one at a time
    off = rehearsal.pyinfra(LOCAL, EAGER, "-y", "--data", "enforce_eager=false")
    assert off.returncode == 0, off.stderr
    assert not [line for line in host_out(off.stderr) if "strategy" in line]
    assert args_of(rolled_out(rehearsal)) == GOOD_ARGS
    assert deployment(rehearsal)["spec"]["strategy"] == SWITCHED


def test_a_rollout_the_full_pool_holds_up_gets_the_switch_from_the_pin_step(rehearsal: Rehearsal) -> None:
    """The runbook's pointers no longer loop: a template written with the default surge (by hand, or by a budget run
    before this switch existed) leaves its new pod Pending beside the old ones; restore names deploys/pin_gpu.py,
    and the pin step — the template already pinned — writes the strategy switch alone, and the rollout finishes."""
    full_pool(rehearsal, IMPLICIT)
    rehearsal.change(with_args([*IMPLICIT, "--max-model-len", "16384"]), change_cause="written with the surge")

    def stuck() -> bool:
        return any(c.get("reason") == "Unschedulable" for p in live_pods(rehearsal)
                   for c in (p.get("status") or {}).get("conditions") or [] if c.get("type") == "PodScheduled")
    wait_until(stuck, what="the surge pod to be unschedulable")
    restore = rehearsal.pyinfra(LOCAL, RESTORE, "--dry")
    assert any("deploys/pin_gpu.py" in line for line in host_out(restore.stderr)), restore.stderr

    _dry, got = dry_then_apply(rehearsal, LOCAL, PIN, expect_diffs=1)  # the strategy's, nothing else
    assert got.returncode == 0, got.stderr
    shown = host_out(got.stderr)
    assert any(line.startswith("unblock the rollout of deployment llm/llama-8b (already pinned to "
                               "nvidia.com/gpu.product=NVIDIA-L40S)") for line in shown), shown
    after = assert_switched(rehearsal, shown)
    assert args_of(after) == [*IMPLICIT, "--max-model-len", "16384"]
