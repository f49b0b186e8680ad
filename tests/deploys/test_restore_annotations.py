"""deploys/restore.py keeps the Deployment's own annotations and shows every one it changes (hostile 15b F1).

kubectl's undo replaces ``/metadata/annotations`` with the target ReplicaSet's copies, so an annotation added to
the Deployment after that revision ran (an owner, Argo CD's tracking id) vanished unannounced. The dry run is the
run for the whole object: the annotation lines ``--dry`` prints, applied to the annotations before, give the
annotations after ``-y``, as its template diff gives the template.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fixtures import pyinfra_run
from fixtures.budget_world import prompted_run
from fixtures.dry_run import dry_then_apply, raw_host_lines
from fixtures.pyinfra_run import Rehearsal
from fixtures.restore_world import (
    HOST,
    LOCAL,
    RESTORE,
    bad_revision,
    crash_looping,
    deployment,
    host_out,
    newest_revision,
    replicaset,
    vllm_runtime,
    wait_until,
    write_inventory,
)
from vllm_remedy import gitops
from vllm_remedy.kube.annotations import Keys
from vllm_remedy.kube.history import CHANGE_CAUSE, REVISION

rehearsal = pyinfra_run.rehearsal
HEAD = "deployment annotations the rollback changes"
RUNBOOK = "oncall.example.com/runbook"
TEAM = "team"


def incident_with_annotations(rehearsal: Rehearsal) -> int:
    """Revision 14 runs with ``runbook: v1`` (the controller copies it onto its ReplicaSet); the bad revision sets
    ``runbook: v2`` and adds ``team``, which revision 14's ReplicaSet never carried. Returns the bad revision."""
    vllm_runtime(rehearsal)
    good = newest_revision(rehearsal)
    rehearsal.change(lambda d: d["metadata"]["annotations"].update({RUNBOOK: "v1"}))
    wait_until(lambda: replicaset(rehearsal, good)["metadata"]["annotations"].get(RUNBOOK) == "v1",
               what="the controller to copy the annotation onto the current ReplicaSet")

    def bad(dep: dict[str, Any]) -> None:
        bad_revision(dep)
        dep["metadata"]["annotations"].update({RUNBOOK: "v2", TEAM: "ml-infra"})

    rehearsal.change(bad, change_cause="drop --max-model-len; move to the L4 pool")
    wait_until(lambda: crash_looping(rehearsal, revision=good + 1), what="the bad revision to crash-loop")
    return good + 1


def shown_changes(text: str) -> list[str]:
    """The annotation lines a run printed under its header (``-  key: "value"`` / ``+  key: "value"``)."""
    lines = raw_host_lines(text)
    start = next((i for i, line in enumerate(lines) if line.startswith(HEAD)), None)
    if start is None:
        return []
    out = []
    for line in lines[start + 1:]:
        if not line.startswith(("-  ", "+  ")):
            break
        out.append(line)
    return out


def applied(notes: dict[str, str], changes: list[str]) -> dict[str, str]:
    """``notes`` with the shown lines applied: a ``-`` removes the key, a ``+`` sets it."""
    out = dict(notes)
    for line in changes:
        key, _, value = line[3:].partition(": ")
        if line.startswith("-"):
            assert out.get(key) == json.loads(value), (line, out)
            out.pop(key)
        else:
            out[key] = json.loads(value)
    return out


def comparable(notes: dict[str, str]) -> dict[str, str]:
    """Everything but our audit annotations (every write sets them) and the controller's revision number."""
    keys = Keys()
    skip = {CHANGE_CAUSE, keys.last_action, keys.last_reason, keys.last_action_at, keys.last_action_template,
            keys.change_id, REVISION}
    return {k: v for k, v in notes.items() if k not in skip}


def test_dry_run_annotation_lines_applied_give_the_annotations_after_the_run(rehearsal: Rehearsal) -> None:
    incident_with_annotations(rehearsal)
    before = deployment(rehearsal)["metadata"]["annotations"]
    dry, run = dry_then_apply(rehearsal, LOCAL, RESTORE, expect_diffs=1)
    assert run.returncode == 0, run.stderr
    shown = shown_changes(dry.stderr)
    # runbook goes back to the value revision 14 ran with; team, never on its ReplicaSet, is kept
    assert shown == [f'-  {RUNBOOK}: "v2"', f'+  {RUNBOOK}: "v1"'], dry.stderr
    assert shown_changes(run.stderr) == shown, run.stderr  # -y logs what it applies
    after = deployment(rehearsal)["metadata"]["annotations"]
    assert after[TEAM] == "ml-infra"
    assert comparable(after) == comparable(applied(before, shown)), (before, after, dry.stderr)


def test_the_prompt_shows_the_annotation_change_and_the_run_makes_exactly_it(rehearsal: Rehearsal) -> None:
    incident_with_annotations(rehearsal)
    before = deployment(rehearsal)["metadata"]["annotations"]
    got = prompted_run(rehearsal, RESTORE, lambda: None, timeout=120)
    assert "Press enter to execute" in got.stderr and got.returncode == 0, got.stderr
    prompt = got.stderr.split("Press enter to execute", 1)[0]
    shown = shown_changes(prompt)
    assert shown == [f'-  {RUNBOOK}: "v2"', f'+  {RUNBOOK}: "v1"'], got.stderr
    after = deployment(rehearsal)["metadata"]["annotations"]
    assert after[TEAM] == "ml-infra"
    assert comparable(after) == comparable(applied(before, shown)), (before, after, got.stderr)


def test_argo_cds_tracking_id_added_after_the_revision_ran_survives_the_rollback(rehearsal: Rehearsal,
                                                                                 tmp_path: Path) -> None:
    """Argo CD's annotation tracking, added on adoption after the revision restored ran: kubectl's undo would erase it,
    and with it the evidence our GitOps stance reads (the next run would write without the warning)."""
    incident_with_annotations(rehearsal)
    tracking = "llm-app:apps/Deployment:llm/llama-8b"
    rehearsal.change(lambda d: d["metadata"]["annotations"].update({gitops.ARGO_TRACKING_ID: tracking}))
    policy = tmp_path / "warn.yaml"
    policy.write_text(f"extends: {pyinfra_run.ROOT / 'policies' / 'llama-8b.yaml'}\ngitops: warn\n")
    got = rehearsal.pyinfra(write_inventory(tmp_path, HOST, policy=str(policy)), RESTORE, "-y")
    assert got.returncode == 0, got.stderr
    assert any("managed by Argo CD Application llm-app" in line for line in host_out(got.stderr)), got.stderr
    after = deployment(rehearsal)
    assert after["metadata"]["annotations"][gitops.ARGO_TRACKING_ID] == tracking
    owner = gitops.detect(after)
    assert owner is not None and (owner.tool, owner.name) == ("Argo CD", "llm-app")
