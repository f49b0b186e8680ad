"""deploys/restore.py on a LeaderWorkerSet reaches past a revision whose layout cannot start, as a Deployment's or a
StatefulSet's restore reaches past one predicted to fail, through the real pyinfra CLI on the rehearsal cluster.

History: 1 serves (TP 1 × PP 2 over 2 pods × 1 GPU), 2 widens the engine to TP 2 × PP 2 (4 GPUs the group does
not have: vLLM refuses it before sizing memory), 3 is the runbook's bad rollout, crash-looping now. Revision 2 has
no crash record (nothing of ours watched it die), so only the world-size check speaks against it: restore skips it
with that reason and rolls back to 1, ``--dry`` showing exactly the change ``-y`` makes; ``--data revision=2`` is
refused in one line; and when revision 1 is recorded dying too, the run refuses in one line, ``--dry`` and ``-y``
alike (exit 1), instead of writing revision 2.
"""

from __future__ import annotations

import json
from pathlib import Path

from fixtures import pyinfra_run
from fixtures.lws_remedy import dry_then_apply, inventory, lines
from fixtures.lws_world import ARGS, BAD_ARGS, GOOD_ARGS, HOST, NAME, RESTORE, patch, read, serve_set
from fixtures.pyinfra_run import Rehearsal
from vllm_remedy.kube.annotations import rfc3339
from vllm_remedy.kube.lws_wait import wait_for_lws_rollout

rehearsal = pyinfra_run.rehearsal
WIDE_ARGS = [*GOOD_ARGS[:6], "2", *GOOD_ARGS[7:]]  # TP 2 × PP 2 = 4 GPUs, the group has 2 pods × 1
SHORT = "world size 4 (TP 2 × PP 2) is larger than the 2 GPUs of the group (2 pods × 1)"
WHERE = f"leaderworkerset llm/{NAME}"
CRASHED = "vllm-remedy.io/crashed"


def _history(rehearsal: Rehearsal) -> dict:
    """Revisions 1 (serves), 2 (wide: cannot start), 3 (bad, crash-looping now); the good set is returned."""
    good = serve_set(rehearsal)
    cluster = rehearsal.clusters["rehearsal"]
    client = rehearsal.client()
    for args in (WIDE_ARGS, BAD_ARGS):
        patch(rehearsal, [{"op": "replace", "path": ARGS, "value": args}])
        # the wide layout on 0.8.5: the placement-group wait gives up at 2,550 cluster seconds
        failed = wait_for_lws_rollout(client, "llm", NAME, timeout=3600, clock=cluster.clock, interval=5,
                                      fetch_log=False)
        assert failed.outcome == "crash-loop", failed.message
    return good


def _revision(rehearsal: Rehearsal, number: int) -> dict:
    client = rehearsal.client()
    items = client.request("GET", client.object_path("llm", "controllerrevisions"))["items"]
    return next(r for r in items if int(r["revision"]) == number)


def _annotate(rehearsal: Rehearsal, number: int, value: str | None) -> None:
    """A crash record on revision ``number``'s ControllerRevision (None: removed)."""
    client = rehearsal.client()
    rev = _revision(rehearsal, number)
    notes = dict(rev["metadata"].get("annotations") or {})
    notes.pop(CRASHED, None)
    if value is not None:
        notes[CRASHED] = value
    client.request("PATCH", client.object_path("llm", "controllerrevisions", rev["metadata"]["name"],
                                               group="apps/v1"),
                   body={"metadata": {"annotations": notes | ({} if value else {CRASHED: None})}},
                   content_type="application/merge-patch+json")


def test_restore_skips_the_layout_that_cannot_start_and_refuses_only_when_nothing_can(
        rehearsal: Rehearsal, tmp_path: Path) -> None:
    good = _history(rehearsal)
    inv = inventory(tmp_path)

    forced = rehearsal.pyinfra(inv, RESTORE, "--dry", "--data", "revision=2", timeout=300)
    said = [line for line in lines(forced) if line and line != "Connected"]
    assert forced.returncode == 2 and len(said) == 1, forced.stderr
    # no override offered: vLLM refuses that layout before loading anything, whatever the operator says
    assert said[0] == (f"host data revision: revision 2 is not restored: it cannot start (predicted to fail: {SHORT}); "
                       "name another revision"), said

    # revision 1 recorded dying as well: no revision can start, one refusal line, --dry and -y alike
    at = rfc3339(rehearsal.client().server_time())
    _annotate(rehearsal, 1, json.dumps({"failure": "max_len_exceeds_kv", "at": at}))
    before = read(rehearsal)
    for flag in ("--dry", "-y"):
        got = rehearsal.pyinfra(inv, RESTORE, flag, timeout=300)
        assert got.returncode == 1, (flag, got.stderr)
        said = lines(got)
        assert any(line.startswith("skipped revision 2 (") and f"predicted to fail: {SHORT}" in line
                   for line in said), said
        refusals = [line for line in said if line.removeprefix("refused: ").startswith("revision 3 crash-loops (")]
        assert len(refusals) == 1 and "no earlier revision served" in refusals[0], "\n".join(said)
        assert not any(line.startswith(f"roll back {WHERE}") for line in said), said
        assert read(rehearsal)["spec"] == before["spec"], flag
    _annotate(rehearsal, 1, None)

    dry, got = dry_then_apply(rehearsal, inv, RESTORE, expect_diffs=1)
    for run in (dry, got):
        said = lines(run)
        assert any(line.startswith(f"roll back {WHERE} from revision 3 to revision 1 (") for line in said), said
        assert any(line.startswith("skipped revision 2 (") and f"predicted to fail: {SHORT}" in line
                   for line in said), said
        assert not any("cannot start either" in line for line in said), said
    assert got.returncode == 0, got.stderr
    assert read(rehearsal)["spec"]["leaderWorkerTemplate"] == good["spec"]["leaderWorkerTemplate"]
    assert HOST in got.stderr
