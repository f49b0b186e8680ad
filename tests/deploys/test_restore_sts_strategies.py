"""What a StatefulSet's update strategy means for deploys/restore.py's rollback, said before it runs, through the real
pyinfra CLI with -y and at the prompt: under OnDelete with ``restore.delete_pods: never`` the pods that keep the
bad revision are named and nothing but the template changes; a RollingUpdate partition is said to hold the
pods below it back from the rollback, as it held them back from the bad rollout."""

from __future__ import annotations

from pathlib import Path

from fixtures import pyinfra_run
from fixtures.budget_world import prompted_run
from fixtures.pyinfra_run import Rehearsal, host_lines
from fixtures.sts_world import RESTORE, bad_rollout, inventory, pod_uids, sts

rehearsal = pyinfra_run.rehearsal
STS_HOST = "@k8s/rehearsal/llm/statefulset/llama-sts"
NAMED = ("then: updateStrategy OnDelete: the rollback reaches a pod only when it is deleted; pods llama-sts-1 stay "
         "on their revision until then: named, not deleted (policy restore.delete_pods: never): delete them for the "
         "rollback to take effect")
BLOCKED = ("statefulset llama-sts: updateStrategy OnDelete replaces a pod only when it is deleted: delete pod "
           "llama-sts-1 for the change to take effect (policy restore.delete_pods: never)")


def test_on_delete_without_the_policy_names_the_pods_and_changes_nothing_else(rehearsal: Rehearsal,
                                                                               tmp_path: Path) -> None:
    before = bad_rollout(rehearsal, {"type": "OnDelete"})
    pods = pod_uids(rehearsal)
    inv = inventory(tmp_path, "never")
    got = prompted_run(rehearsal, RESTORE, lambda: None, timeout=120, inventory=inv)
    assert got.returncode == 1, got.stderr
    lines = host_lines(got.stderr, STS_HOST)
    assert NAMED in lines, lines
    assert any(line.startswith("wait for revision 1 to roll out: blocked after ") and line.endswith(BLOCKED)
               for line in lines), lines
    after = sts(rehearsal)
    assert after["spec"]["template"] != before["spec"]["template"]  # the rollback itself is written ...
    assert {k: v for k, v in after["spec"].items() if k != "template"} == \
        {k: v for k, v in before["spec"].items() if k != "template"}
    assert pod_uids(rehearsal) == pods  # ... and no pod is touched
    again = rehearsal.pyinfra(inv, RESTORE, "-y")  # -y: the same pod named, nothing written or deleted
    assert again.returncode == 1, again.stderr
    lines = host_lines(again.stderr, STS_HOST)
    assert any(line.startswith("finish the rollout of statefulset llm/llama-sts: blocked after ") and
               line.endswith(BLOCKED) for line in lines), lines
    assert pod_uids(rehearsal) == pods
    now = sts(rehearsal)
    assert (now["spec"], now["metadata"]["generation"], now["metadata"]["annotations"]) == \
        (after["spec"], after["metadata"]["generation"], after["metadata"]["annotations"])


def test_a_partition_is_said_to_hold_the_pods_below_it_back_from_the_rollback(rehearsal: Rehearsal,
                                                                              tmp_path: Path) -> None:
    bad_rollout(rehearsal, {"type": "RollingUpdate", "rollingUpdate": {"partition": 1}})
    held = pod_uids(rehearsal)["llama-sts-0"]  # never replaced: below the partition
    said = ("then: updateStrategy RollingUpdate partition 1: the rollback replaces only pods with ordinal >= 1 "
            "(llama-sts-1); pods below it (llama-sts-0) keep the revision they run until the partition is lowered — "
            "as it held back the bad rollout, it holds back the rollback")
    inv = inventory(tmp_path)
    declined = rehearsal.pyinfra(inv, RESTORE, stdin="n\n")
    assert said in host_lines(declined.stderr, STS_HOST), declined.stderr
    got = rehearsal.pyinfra(inv, RESTORE, "-y", timeout=300)
    assert got.returncode == 0, got.stderr
    assert said in host_lines(got.stderr, STS_HOST)
    assert pod_uids(rehearsal)["llama-sts-0"] == held
    assert sts(rehearsal)["status"]["readyReplicas"] == 2
