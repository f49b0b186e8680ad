"""What a StatefulSet's update strategy means for a template change of deploys/budget.py (the same wait ends
pin_gpu, enforce_eager and load_guard), said before it runs, through the real pyinfra CLI: under OnDelete the change
reaches a pod only when it is deleted — named and left under ``restore.delete_pods: never``, deleted under
``blocking``; a RollingUpdate partition keeps the pods below it on the revision they run."""

from __future__ import annotations

from pathlib import Path

from fixtures import pyinfra_run
from fixtures.budget_world import BUDGET
from fixtures.pyinfra_run import Rehearsal, host_lines
from fixtures.sts_step4 import (
    IMPLICIT,
    dry_is_the_run,
    implicit_pending,
    inventory,
    live,
    rolled_out,
)
from fixtures.sts_world import STS_HOST, pod_uids, sts

rehearsal = pyinfra_run.rehearsal
FIXED = [*IMPLICIT, "--max-model-len", "16384"]
ON_DELETE = {"type": "OnDelete"}


def implicit_on_delete(rehearsal: Rehearsal) -> dict[str, str]:
    """An OnDelete set whose template dropped --max-model-len; its pods (uids) still run revision 1."""
    implicit_pending(rehearsal, ON_DELETE)
    return pod_uids(rehearsal)


def test_on_delete_without_the_policy_names_the_pods_writes_the_template_and_fails(rehearsal: Rehearsal,
                                                                                   tmp_path: Path) -> None:
    pods = implicit_on_delete(rehearsal)
    before = sts(rehearsal)
    inv = inventory(tmp_path, delete_pods="never")
    said = ("then: updateStrategy OnDelete: the change reaches a pod only when it is deleted; pods llama-sts-0, "
            "llama-sts-1 stay on their revision until then: named, not deleted (policy restore.delete_pods: never): "
            "delete them for the change to take effect")
    dry = rehearsal.pyinfra(inv, BUDGET, "--dry")
    assert dry.returncode == 1 and said in host_lines(dry.stderr, STS_HOST), dry.stderr  # as -y: blocked
    got = rehearsal.pyinfra(inv, BUDGET, "-y", timeout=300)
    assert got.returncode == 1, got.stderr
    lines = host_lines(got.stderr, STS_HOST)
    assert said in lines, lines
    assert any(line.startswith("wait for statefulset llm/llama-sts to roll out: blocked after ") and line.endswith(
        "updateStrategy OnDelete replaces a pod only when it is deleted: delete pod llama-sts-0, llama-sts-1 for the "
        "change to take effect (policy restore.delete_pods: never)") for line in lines), lines
    after = sts(rehearsal)
    assert after["spec"]["template"]["spec"]["containers"][0]["args"] == FIXED  # the change is written ...
    assert {k: v for k, v in after["spec"].items() if k != "template"} == \
        {k: v for k, v in before["spec"].items() if k != "template"}
    assert pod_uids(rehearsal) == pods  # ... and no pod is touched


def test_on_delete_with_the_policy_deletes_the_pods_and_they_end_ready(rehearsal: Rehearsal, tmp_path: Path) -> None:
    pods = implicit_on_delete(rehearsal)
    inv = inventory(tmp_path, delete_pods="blocking")
    dry, got = dry_is_the_run(rehearsal, inv, BUDGET, expect_diffs=1)
    assert got.returncode == 0, got.stderr
    assert ("then: updateStrategy OnDelete: the change reaches a pod only when it is deleted; pods llama-sts-0, "
            "llama-sts-1 stay on their revision until then: deleted (policy restore.delete_pods: blocking)"
            in host_lines(dry.stderr, STS_HOST)), dry.stderr
    lines = host_lines(got.stderr, STS_HOST)
    for pod in ("llama-sts-0", "llama-sts-1"):
        assert any(line.endswith(f"deleted pod {pod} (policy restore.delete_pods: blocking)") for line in lines), lines
    rolled_out(rehearsal)
    assert set(pod_uids(rehearsal).values()).isdisjoint(pods.values())
    assert len(live(rehearsal)) == 2


def test_a_partition_is_said_to_hold_the_pods_below_it_and_the_wait_ends_at_it(rehearsal: Rehearsal,
                                                                               tmp_path: Path) -> None:
    implicit_pending(rehearsal, {"type": "RollingUpdate", "rollingUpdate": {"partition": 1}})
    held = pod_uids(rehearsal)["llama-sts-0"]
    inv = inventory(tmp_path)
    said = ("then: updateStrategy RollingUpdate partition 1: the change replaces only pods with ordinal >= 1 "
            "(llama-sts-1); pods below it (llama-sts-0) keep the revision they run until the partition is lowered")
    dry, got = dry_is_the_run(rehearsal, inv, BUDGET, expect_diffs=1)
    assert said in host_lines(dry.stderr, STS_HOST), dry.stderr
    assert got.returncode == 0, got.stderr
    assert pod_uids(rehearsal)["llama-sts-0"] == held
    assert sts(rehearsal)["status"]["readyReplicas"] == 2
