"""deploys/restore.py on the StatefulSet llama-sts keeps the timed toggle's promise, through the real pyinfra CLI on
the rehearsal cluster: the toggled revision is no rollback target (its ControllerRevision carries the toggle's
record, which the controller copies from the set, as a Deployment's ReplicaSet does), and the expired record
comes off the set in the rollback's own write (one guarded change: no second, annotation-only write that a colleague's
edit in between could be overwritten by), so --dry lists one change to the set, as -y makes one."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from fixtures import pyinfra_run
from fixtures.budget_world import GOOD_ARGS
from fixtures.pyinfra_run import Rehearsal, host_lines
from fixtures.sts_step4 import dry_is_the_run, expired_toggle_under_a_crash, rolled_out
from fixtures.sts_world import RESTORE, STS_HOST
from fixtures.sts_world import inventory as plain_inventory

rehearsal = pyinfra_run.rehearsal
EXPIRES, PRIOR = "vllm-remedy.io/enforce-eager-expires", "vllm-remedy.io/enforce-eager-prior"


def args(obj: dict[str, Any]) -> list[str]:
    return list(obj["spec"]["template"]["spec"]["containers"][0]["args"])


def test_restore_reverts_an_expired_toggle_after_the_rollback_as_dry_showed(rehearsal: Rehearsal,
                                                                            tmp_path: Path) -> None:
    expired_toggle_under_a_crash(rehearsal, tmp_path)  # revision 3 over the toggled revision 2 dies
    # the shipped default policy: the newest good revision (2) ran the toggle, so revision 1 is restored
    # one template diff (the rollback), whose write drops the set's stale record too: the revert has nothing left
    dry, got = dry_is_the_run(rehearsal, plain_inventory(tmp_path), RESTORE, expect_diffs=1)
    assert got.returncode == 0, got.stderr
    said = host_lines(dry.stderr, STS_HOST)
    assert any(line.startswith("roll back statefulset llm/llama-sts from revision 3 to revision 1") for line in said)
    assert any(line.startswith("skipped revision 2 (") and "ran --enforce-eager as a temporary toggle (its record "
               "is on that revision)" in line for line in said), said
    for run in (dry, got):
        assert "noop: no temporary toggle has expired" in host_lines(run.stderr, STS_HOST), run.stderr
    assert _detected(dry.stderr) == {"Record crash-looping revisions on their ControllerRevisions": "1",
                                     "Roll a crash-looping StatefulSet back to the newest good revision": "1",
                                     "Revert expired temporary toggles": "-",
                                     "Wait until the new pods are Ready": "-"}, dry.stderr
    after = rolled_out(rehearsal)
    assert args(after) == GOOD_ARGS
    notes = after["metadata"]["annotations"]
    assert EXPIRES not in notes and PRIOR not in notes and notes["vllm-remedy.io/last-action"] == "restore", notes
    assert notes["vllm-remedy.io/last-action-reason"].startswith("roll back to revision 1 ("), notes


def _detected(stderr: str) -> dict[str, str]:
    """pyinfra's "Detected changes" table of a --dry run: operation name -> its Change column ("1", "-")."""
    table = stderr.split("--> Detected changes:", 1)[1].split("\n\n", 1)[0].splitlines()[2:]
    cells = [re.split(r"\s{2,}", row.strip()) for row in table if row.strip()]
    return {row[0]: row[1].split()[0] for row in cells}
