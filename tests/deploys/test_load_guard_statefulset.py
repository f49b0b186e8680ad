"""deploys/load_guard.py (runbook step 5, OOM under load) on the StatefulSet llama-sts, through the real pyinfra CLI
on the rehearsal cluster: the Deployment's promises (tests/deploys/test_load_guard.py) kept for the set."""

from __future__ import annotations

from pathlib import Path

from fixtures import pyinfra_run
from fixtures.budget_world import GOOD_ARGS, LOAD_GUARD, MODEL, prompted_run
from fixtures.pyinfra_run import Rehearsal, host_lines
from fixtures.sts_step4 import (
    dry_is_the_run,
    edit,
    edited_between_read_and_write,
    env_fix,
    inventory,
    no_changes,
    on_l4,
    rolled_out,
    scenario,
    their_edit_stands,
    with_args,
)
from fixtures.sts_world import STS_HOST, crash_looping_on, llama_set, sts

rehearsal = pyinfra_run.rehearsal
BIG_PREFILL = [*GOOD_ARGS, "--max-num-batched-tokens", "16384"]


def test_dry_is_the_run_and_a_rerun_changes_nothing(rehearsal: Rehearsal, tmp_path: Path) -> None:
    scenario(rehearsal, with_args(BIG_PREFILL))
    inv = inventory(tmp_path)
    dry, got = dry_is_the_run(rehearsal, inv, LOAD_GUARD, expect_diffs=1)
    assert got.returncode == 0, got.stderr
    shown = host_lines(dry.stderr, STS_HOST)
    assert "-    - '16384'" in shown and "+    - '4096'" in shown, shown
    assert len([line for line in shown if line.startswith("prediction on NVIDIA-L40S: fits")]) == 1, shown
    summary = "cap load on statefulset llm/llama-sts: --max-num-batched-tokens 4096"
    assert any(line.startswith(summary + ": written") for line in host_lines(got.stderr, STS_HOST)), got.stderr
    after = rolled_out(rehearsal)
    assert after["spec"]["template"]["spec"]["containers"][0]["args"] == [*GOOD_ARGS, "--max-num-batched-tokens",
                                                                          "4096"]
    no_changes(rehearsal, inv, LOAD_GUARD, 4)


def test_a_cap_predicted_not_to_start_is_refused_and_nothing_changes(rehearsal: Rehearsal, tmp_path: Path) -> None:
    """The set on 24 GB L4s at the model's 131072 tokens with big prefill chunks: the cap alone does not make it
    start, so it is refused with the prediction, as any flag write is."""
    llama_set(rehearsal)
    edit(rehearsal, on_l4([MODEL, "--gpu-memory-utilization", "0.90", "--max-num-seqs", "64",
                           "--max-num-batched-tokens", "16384"]))
    crash_looping_on(rehearsal, "llama-sts-1")
    before = sts(rehearsal)
    got = rehearsal.pyinfra(inventory(tmp_path), LOAD_GUARD, "-y")
    assert got.returncode == 1, got.stderr
    refused = [line for line in host_lines(got.stderr, STS_HOST)
               if line.startswith("refused: --max-num-batched-tokens 4096 on statefulset llm/llama-sts: ")]
    assert len(refused) == 1 and "predicted" in refused[0], got.stderr
    after = sts(rehearsal)
    assert (after["spec"], after["metadata"]["generation"]) == (before["spec"], before["metadata"]["generation"])


def test_with_y_a_concurrent_edit_is_refused_and_kept(rehearsal: Rehearsal, tmp_path: Path) -> None:
    scenario(rehearsal, with_args(BIG_PREFILL))
    got = edited_between_read_and_write(rehearsal, inventory(tmp_path), LOAD_GUARD, tmp_path)
    their_edit_stands(rehearsal, got)
    assert sts(rehearsal)["spec"]["template"]["spec"]["containers"][0]["args"] == BIG_PREFILL


def test_an_edit_at_the_prompt_is_refused_and_kept(rehearsal: Rehearsal, tmp_path: Path) -> None:
    scenario(rehearsal, with_args(BIG_PREFILL))
    got = prompted_run(rehearsal, LOAD_GUARD, lambda: edit(rehearsal, env_fix), timeout=120,
                       inventory=inventory(tmp_path))
    their_edit_stands(rehearsal, got)
