"""deploys/enforce_eager.py (the timed --enforce-eager toggle) on the StatefulSet llama-sts, through the real pyinfra
CLI on the rehearsal cluster: the toggle's record lives on the set, any later deploy reverts it once expired, and
the Deployment's promises (tests/deploys/test_enforce_eager.py) are kept."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from fixtures import pyinfra_run
from fixtures.budget_world import EAGER, GOOD_ARGS, LOAD_GUARD, prompted_run
from fixtures.pyinfra_run import Rehearsal, host_lines
from fixtures.restore_world import CONFIRM, FAST_FORWARD, fast_forward
from fixtures.sts_step4 import (
    dry_is_the_run,
    edit,
    edited_between_read_and_write,
    env_fix,
    inventory,
    no_changes,
    quiet,
    rolled_out,
    their_edit_stands,
)
from fixtures.sts_world import STS_HOST, bad_rollout, llama_set, revision_names, sts

rehearsal = pyinfra_run.rehearsal
EXPIRES, PRIOR = "vllm-remedy.io/enforce-eager-expires", "vllm-remedy.io/enforce-eager-prior"
PRIOR_JSON = json.dumps({"args": GOOD_ARGS, "command": ["vllm", "serve"], "container": "vllm"}, sort_keys=True,
                        separators=(",", ":"))


def args(obj: dict[str, Any]) -> list[str]:
    return list(obj["spec"]["template"]["spec"]["containers"][0]["args"])


def test_dry_is_the_run_the_record_is_on_the_set_and_a_rerun_changes_nothing(rehearsal: Rehearsal,
                                                                             tmp_path: Path) -> None:
    llama_set(rehearsal)
    quiet(rehearsal)
    inv = inventory(tmp_path)
    dry, got = dry_is_the_run(rehearsal, inv, EAGER, "--data", "eager_ttl=30m", expect_diffs=1)
    assert got.returncode == 0, got.stderr
    assert "+    - --enforce-eager" in host_lines(dry.stderr, STS_HOST), dry.stderr
    after = rolled_out(rehearsal)
    assert args(after) == [*GOOD_ARGS, "--enforce-eager"]
    notes = after["metadata"]["annotations"]
    assert notes[PRIOR] == PRIOR_JSON and notes[EXPIRES].endswith("Z")
    assert notes["vllm-remedy.io/last-action"] == "enforce-eager"
    rehearsal.cluster.clock.set_speed(5.0)  # 30 minutes of cluster time would pass in 3 s at the tests' speed
    lines = no_changes(rehearsal, inv, EAGER, 4, "--data", "eager_ttl=30m")
    assert any(line.startswith("noop: --enforce-eager is already on for statefulset llm/llama-sts until ")
               for line in lines), lines


def test_an_expired_toggle_on_the_set_is_reverted_by_any_later_deploy(rehearsal: Rehearsal, tmp_path: Path) -> None:
    llama_set(rehearsal)
    inv = inventory(tmp_path)
    on = rehearsal.pyinfra(inv, EAGER, "-y", "--data", "eager_ttl=30m", timeout=300)
    assert on.returncode == 0, on.stderr
    edit(rehearsal, lambda obj: obj["metadata"]["annotations"].__setitem__(EXPIRES, "2001-01-01T00:00:00Z"))
    rolled_out(rehearsal)
    quiet(rehearsal)
    dry, got = dry_is_the_run(rehearsal, inv, LOAD_GUARD, expect_diffs=1)  # load_guard itself has nothing to cap
    assert got.returncode == 0, got.stderr
    assert "-    - --enforce-eager" in host_lines(dry.stderr, STS_HOST), dry.stderr
    after = rolled_out(rehearsal)
    assert args(after) == GOOD_ARGS
    assert EXPIRES not in after["metadata"]["annotations"] and PRIOR not in after["metadata"]["annotations"]
    no_changes(rehearsal, inv, LOAD_GUARD, 4)


def test_turning_it_off_predicted_not_to_start_is_refused_and_nothing_changes(rehearsal: Rehearsal,
                                                                              tmp_path: Path) -> None:
    """At --gpu-memory-utilization 0.98 the CUDA graphs eager mode saves put the predicted peak over the L40S."""
    llama_set(rehearsal)
    tight = [a if a != "0.90" else "0.98" for a in GOOD_ARGS]
    prior = json.dumps({"args": tight, "command": ["vllm", "serve"], "container": "vllm"})

    def tight_and_eager(obj: dict[str, Any]) -> None:
        obj["spec"]["template"]["spec"]["containers"][0]["args"] = [*tight, "--enforce-eager"]
        obj["metadata"].setdefault("annotations", {}).update({EXPIRES: "2099-01-01T00:00:00Z", PRIOR: prior})

    edit(rehearsal, tight_and_eager)
    before = sts(rehearsal)
    inv = inventory(tmp_path)
    for flags in ("--dry",), ("-y",):  # a refusal fails the host in both: --dry exits 1 as -y does (CI reads it)
        got = rehearsal.pyinfra(inv, EAGER, *flags, "--data", "enforce_eager=false")
        assert got.returncode == 1, got.stderr
        said = "--enforce-eager off on statefulset llm/llama-sts: without it predicted " \
               "cudagraph_capture_oom on NVIDIA-L40S (prediction on NVIDIA-L40S: cudagraph_capture_oom"
        assert len([line for line in host_lines(got.stderr, STS_HOST) if said in line]) == 1, got.stderr
    after = sts(rehearsal)
    assert (after["spec"], after["metadata"]["annotations"]) == (before["spec"], before["metadata"]["annotations"])


def test_with_y_a_concurrent_edit_is_refused_and_kept(rehearsal: Rehearsal, tmp_path: Path) -> None:
    llama_set(rehearsal)
    got = edited_between_read_and_write(rehearsal, inventory(tmp_path), EAGER, tmp_path, "--data", "eager_ttl=30m")
    their_edit_stands(rehearsal, got)
    assert args(sts(rehearsal)) == GOOD_ARGS


def test_an_edit_at_the_prompt_is_refused_and_kept(rehearsal: Rehearsal, tmp_path: Path) -> None:
    llama_set(rehearsal)
    got = prompted_run(rehearsal, EAGER, lambda: edit(rehearsal, env_fix), timeout=120, inventory=inventory(tmp_path))
    their_edit_stands(rehearsal, got)
    assert args(sts(rehearsal)) == GOOD_ARGS


def test_a_crash_loop_after_the_change_fails_fast_and_is_recorded_on_its_revision(rehearsal: Rehearsal,
                                                                                   tmp_path: Path) -> None:
    """Eager mode on a set whose revision 2 dies at start whatever its flags: the crash-looping pod OrderedReady
    waits on is deleted (policy blocking), the new revision crash-loops too, and the wait fails on it long before
    its timeout, recording the crash on that revision's ControllerRevision and on revision 2's before it."""
    bad_rollout(rehearsal)
    got = rehearsal.pyinfra(inventory(tmp_path), EAGER, "-y", "--data", "eager_ttl=30m", timeout=300)
    assert got.returncode == 1, got.stderr
    lines = host_lines(got.stderr, STS_HOST)
    [failed] = [line for line in lines if line.startswith("wait for statefulset llm/llama-sts to roll out: crash-loop "
                                                          "after ")]
    assert int(failed.split(" after ")[1].split("s")[0]) < 900, failed  # the policy's timeout: 15 minutes
    assert any(line.startswith("wait for statefulset llm/llama-sts to roll out: recorded on controllerrevision ")
               for line in lines), lines
    revisions = revision_names(rehearsal)
    for number in (2, 3):
        assert "vllm-remedy.io/crashed" in (revisions[number]["metadata"].get("annotations") or {}), number
    assert "--enforce-eager" in args(sts(rehearsal))


def test_confirm_takes_an_expired_toggle_off_before_it_marks_the_revision(rehearsal: Rehearsal, tmp_path: Path) -> None:
    """Step 6 must not bless a stop-gap: on a StatefulSet too, the expired toggle comes off and the mark goes on the
    revision that runs without it."""
    llama_set(rehearsal)
    inv = inventory(tmp_path)
    on = rehearsal.pyinfra(inv, EAGER, "-y", "--data", "eager_ttl=30m", timeout=300)
    assert on.returncode == 0, on.stderr
    edit(rehearsal, lambda obj: obj["metadata"]["annotations"].__setitem__(EXPIRES, "2001-01-01T00:00:00Z"))
    rolled_out(rehearsal)
    quiet(rehearsal)
    got = rehearsal.pyinfra(inv, CONFIRM, "-y", timeout=300)
    assert "-    - --enforce-eager" in host_lines(got.stderr, STS_HOST), got.stderr
    # the reverted pods have just started: not stable yet, so nothing is marked in this run
    assert got.returncode == 1 and "not confirmed: pod llama-sts-" in got.stderr, got.stderr
    after = rolled_out(rehearsal)
    assert args(after) == GOOD_ARGS
    assert EXPIRES not in after["metadata"]["annotations"] and PRIOR not in after["metadata"]["annotations"]
    assert not any("vllm-remedy.io/known-good" in (r["metadata"].get("annotations") or {})
                   for r in revision_names(rehearsal).values())
    with fast_forward(rehearsal.cluster.clock):  # 40 cluster minutes: past the policy's 30m of stability
        time.sleep(40 * 60 / FAST_FORWARD)
    got = rehearsal.pyinfra(inv, CONFIRM, "-y", timeout=300)
    assert got.returncode == 0, got.stderr
    marked = [r for r in revision_names(rehearsal).values()
              if "vllm-remedy.io/known-good" in (r["metadata"].get("annotations") or {})]
    assert len(marked) == 1 and "--enforce-eager" not in json.dumps(marked[0]["data"]), marked
