"""deploys/restore.py on an OrderedReady StatefulSet under ``restore.delete_pods: never``, through the real pyinfra CLI
on the rehearsal cluster: the crash-looping pod of the bad revision keeps the rollback from reaching it, so ``-y``
writes the rollback and its wait fails, naming the pod — and ``--dry`` exits 1 with that line too (CI and the
responder read ``--dry``'s status as what ``-y`` would do), before the write and on the rerun alike, deleting nothing.
"""

from __future__ import annotations

from pathlib import Path

from fixtures import pyinfra_run
from fixtures.pyinfra_run import Rehearsal, host_lines
from fixtures.sts_world import RESTORE, STS_HOST, bad_rollout, inventory, pod_uids, sts

rehearsal = pyinfra_run.rehearsal
TAIL = ("statefulset llama-sts: podManagementPolicy OrderedReady does not move past a pod that is not Running and "
        "Ready: delete pod llama-sts-1 for the change to take effect (policy restore.delete_pods: never)")


def test_dry_fails_as_y_does_when_an_ordered_ready_pod_blocks_the_rollback(rehearsal: Rehearsal,
                                                                           tmp_path: Path) -> None:
    bad_rollout(rehearsal)  # revision 1 serves on llama-sts-0, revision 2 crash-loops on llama-sts-1
    before = sts(rehearsal)
    pods = pod_uids(rehearsal)
    inv = inventory(tmp_path, "never")
    for n, (flag, label) in enumerate([("--dry", "wait for revision 1 to roll out"),
                                       ("-y", "wait for revision 1 to roll out"),
                                       ("--dry", "finish the rollout of statefulset llm/llama-sts"),
                                       ("-y", "finish the rollout of statefulset llm/llama-sts")]):
        got = rehearsal.pyinfra(inv, RESTORE, flag, timeout=300)
        lines = host_lines(got.stderr, STS_HOST)
        assert got.returncode == 1, (n, got.stderr)
        assert [line for line in lines if line.startswith(f"{label}: blocked") and line.endswith(TAIL)], (
            n, "\n".join(lines))
        assert pod_uids(rehearsal)["llama-sts-1"] == pods["llama-sts-1"], n  # nothing deleted
        if n == 0:
            assert any(line.startswith("roll back statefulset llm/llama-sts from revision 2 to revision 1 (")
                       for line in lines), lines
            assert sts(rehearsal)["spec"] == before["spec"], "--dry wrote"
    # the first -y wrote the rollback (revision 1's template: no crash annotations), as --dry showed it would
    assert "annotations" not in sts(rehearsal)["spec"]["template"]["metadata"], sts(rehearsal)["spec"]["template"]
