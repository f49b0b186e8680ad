"""deploys/restore.py forced onto a StatefulSet's toggled revision (``--data revision=2 --data override=evidence``),
through the real pyinfra CLI on the rehearsal cluster: the operator gets the revision they named, as a Deployment does
(kubectl's undo brings no toggle record back): its template with --enforce-eager on, the set's toggle record dropped
in the rollback's own write, so the flag stays with no expiry — what the warning says — and no revert rolls the set a
second time. --dry lists one change to the set, and -y makes exactly that one (the Deployment it follows: the last
test)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fixtures import pyinfra_run
from fixtures.budget_world import EAGER, GOOD_ARGS
from fixtures.budget_world import rolled_out as deployment_rolled_out
from fixtures.dry_run import dry_then_apply
from fixtures.pyinfra_run import Rehearsal, host_lines
from fixtures.restore_world import HOST, LOCAL, bad_revision, crash_looping, deployment, vllm_runtime, wait_until
from fixtures.restore_world import quiet as deployment_quiet
from fixtures.sts_step4 import dry_is_the_run, expired_toggle_under_a_crash, rolled_out
from fixtures.sts_world import RESTORE, STS_HOST, revision_names
from fixtures.sts_world import inventory as plain_inventory

rehearsal = pyinfra_run.rehearsal
EXPIRES, PRIOR = "vllm-remedy.io/enforce-eager-expires", "vllm-remedy.io/enforce-eager-prior"
FORCED = ("--data", "revision=2", "--data", "override=evidence")
WARNING = ("warning: forced despite the evidence (override=evidence): ran --enforce-eager as a temporary toggle (its "
           "record is on that revision): restoring it would keep --enforce-eager on with no expiry")


def args(obj: dict[str, Any]) -> list[str]:
    return list(obj["spec"]["template"]["spec"]["containers"][0]["args"])


def test_forcing_the_toggled_revision_keeps_the_flag_with_no_expiry_in_one_rollout(rehearsal: Rehearsal,
                                                                                   tmp_path: Path) -> None:
    expired_toggle_under_a_crash(rehearsal, tmp_path)  # revision 3 over the toggled revision 2 dies
    dry, got = dry_is_the_run(rehearsal, plain_inventory(tmp_path), RESTORE, *FORCED, expect_diffs=1)
    assert got.returncode == 0, got.stderr
    for run in (dry, got):
        said = host_lines(run.stderr, STS_HOST)
        assert any(line.startswith("roll back statefulset llm/llama-sts from revision 3 to revision 2")
                   for line in said), said
        assert WARNING in said, said
        assert "noop: no temporary toggle has expired" in said, run.stderr  # the rollback left none to revert
    after = rolled_out(rehearsal)
    assert args(after) == [*GOOD_ARGS, "--enforce-eager"]  # the revision the operator named, as it ran
    notes = after["metadata"]["annotations"]
    assert EXPIRES not in notes and PRIOR not in notes, notes
    assert notes["vllm-remedy.io/last-action"] == "restore", notes
    assert max(revision_names(rehearsal)) == 4  # one rollout: revision 2 renumbered to 4, no revert on top


def test_the_deployment_it_follows_does_the_same(rehearsal: Rehearsal) -> None:
    """The reference: kubectl's undo of a Deployment brings no toggle record back, so the forced toggled revision 15
    runs --enforce-eager with no expiry, in one rollout, as warned."""
    vllm_runtime(rehearsal)
    deployment_quiet(rehearsal)
    on = rehearsal.pyinfra(LOCAL, EAGER, "-y", "--data", "eager_ttl=30m", timeout=300)
    assert on.returncode == 0, on.stderr
    deployment_rolled_out(rehearsal)
    rehearsal.change(lambda d: d["metadata"]["annotations"].__setitem__(EXPIRES, "2001-01-01T00:00:00Z"))
    rehearsal.change(bad_revision)  # revision 16 over the toggled revision 15 dies
    wait_until(lambda: crash_looping(rehearsal), 30, "revision 16 to crash-loop")
    dry, got = dry_then_apply(rehearsal, LOCAL, RESTORE, "--data", "revision=15", "--data",
                              "override=evidence", expect_diffs=1)
    assert got.returncode == 0, got.stderr
    assert all(WARNING in host_lines(run.stderr, HOST) for run in (dry, got)), dry.stderr
    after = deployment(rehearsal)
    assert args(after) == [*GOOD_ARGS, "--enforce-eager"]
    assert EXPIRES not in after["metadata"]["annotations"] and PRIOR not in after["metadata"]["annotations"]
