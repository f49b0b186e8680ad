"""Under ``updateStrategy: OnDelete`` a pod is deleted only onto a template that is our own write, through the real
pyinfra CLI: the set's template digest must equal our ``last-action-template`` annotation (this run's write or an
earlier run's, so a rerun after kill -9 still finishes our rollout). A colleague's ``kubectl patch`` is theirs to
roll out: a deploy that writes nothing names the pods that stay and exits 0. Under ``restore.delete_pods: never``
``--dry`` exits as ``-y`` will (1, with the same "blocked" line), a rerun too. And restore's wait after an OnDelete
rollback is planned on what the rollback leaves: ``--dry`` plans no deletion that ``-y`` never makes."""

from __future__ import annotations

import subprocess
from pathlib import Path

from fixtures import pyinfra_run
from fixtures.budget_world import BUDGET, EAGER, GOOD_ARGS, LOAD_GUARD
from fixtures.pyinfra_run import Rehearsal, detected_changes, host_lines
from fixtures.restore_world import killed_once
from fixtures.sts_step4 import IMPLICIT, edit, env_fix, implicit_pending, inventory, quiet, rolled_out, with_args
from fixtures.sts_world import RESTORE, STS_HOST, bad_rollout, faster_once_deleted, llama_set, pod_uids, sts
from fixtures.sts_world import inventory as restore_inventory
from vllm_remedy.kube.sts_wait import NOT_OURS

rehearsal = pyinfra_run.rehearsal
ON_DELETE = {"type": "OnDelete"}
NAMED = f"statefulset llm/llama-sts: pods llama-sts-0, llama-sts-1 stay on their revision: {NOT_OURS}"
BLOCKED = ("statefulset llama-sts: updateStrategy OnDelete replaces a pod only when it is deleted: delete pod "
           "llama-sts-0, llama-sts-1 for the change to take effect (policy restore.delete_pods: never)")
WAIT = "wait for statefulset llm/llama-sts to roll out"


def deletions(lines: list[str]) -> list[str]:
    return [line.split("deleted pod ", 1)[1].split()[0] for line in lines if "deleted pod " in line]


def colleagues_patch(rehearsal: Rehearsal, mutate=env_fix) -> dict[str, str]:
    """OnDelete, then a colleague's template patch no pod runs yet; the pods' uids."""
    llama_set(rehearsal, ON_DELETE)
    edit(rehearsal, mutate)
    quiet(rehearsal)
    return pod_uids(rehearsal)


def untouched(rehearsal: Rehearsal, got: subprocess.CompletedProcess[str], pods: dict[str, str]) -> list[str]:
    assert got.returncode == 0, got.stderr
    lines = host_lines(got.stderr, STS_HOST)
    assert deletions(lines) == [] and pod_uids(rehearsal) == pods, lines
    assert any(line.endswith(NAMED) for line in lines), lines
    return lines


def test_load_guard_writing_nothing_leaves_a_colleagues_on_delete_patch_alone(rehearsal: Rehearsal,
                                                                              tmp_path: Path) -> None:
    pods = colleagues_patch(rehearsal)
    before = sts(rehearsal)
    inv = inventory(tmp_path)  # restore.delete_pods: blocking
    dry = rehearsal.pyinfra(inv, LOAD_GUARD, "--dry")
    untouched(rehearsal, dry, pods)
    untouched(rehearsal, rehearsal.pyinfra(inv, LOAD_GUARD, "-y", timeout=300), pods)
    assert sts(rehearsal)["spec"] == before["spec"]


def test_restore_with_nothing_to_restore_leaves_a_colleagues_on_delete_patch_alone(rehearsal: Rehearsal,
                                                                                   tmp_path: Path) -> None:
    pods = colleagues_patch(rehearsal)
    got = rehearsal.pyinfra(restore_inventory(tmp_path), RESTORE, "-y", timeout=300)
    untouched(rehearsal, got, pods)


def test_enforce_eager_on_a_persons_flag_leaves_a_colleagues_on_delete_patch_alone(rehearsal: Rehearsal,
                                                                                   tmp_path: Path) -> None:
    pods = colleagues_patch(rehearsal, with_args([*GOOD_ARGS, "--enforce-eager"]))
    got = rehearsal.pyinfra(inventory(tmp_path), EAGER, "-y", "--data", "eager_ttl=30m", timeout=300)
    untouched(rehearsal, got, pods)
    assert "COLLEAGUE" not in str(sts(rehearsal)["metadata"].get("annotations"))


def test_after_kill_9_a_deploy_writing_nothing_still_finishes_our_own_rollout(rehearsal: Rehearsal,
                                                                               tmp_path: Path) -> None:
    implicit_pending(rehearsal, ON_DELETE)
    inv = inventory(tmp_path)
    rehearsal.cluster.clock.set_speed(5.0)  # the replacement takes ~15 s of real time to load: killed mid-wait
    killed_once(rehearsal, inv, BUDGET, tmp_path, "deleted pod llama-sts-1", "the run to delete its first pod")
    kept = pod_uids(rehearsal)["llama-sts-0"]
    with faster_once_deleted(rehearsal, "llama-sts-0"):  # the rerun has waited for llama-sts-1 by then
        again = rehearsal.pyinfra(inv, LOAD_GUARD, "-y", timeout=300)  # writes nothing: the template is our budget's
    assert again.returncode == 0, again.stderr
    lines = host_lines(again.stderr, STS_HOST)
    assert deletions(lines) == ["llama-sts-0"], lines
    assert not any(NOT_OURS in line for line in lines), lines
    rehearsal.cluster.clock.set_speed(60.0)
    rolled_out(rehearsal)
    assert pod_uids(rehearsal)["llama-sts-0"] != kept


def test_under_never_dry_fails_as_y_does_and_so_does_a_rerun(rehearsal: Rehearsal, tmp_path: Path) -> None:
    implicit_pending(rehearsal, ON_DELETE)
    pods = pod_uids(rehearsal)
    inv = inventory(tmp_path, delete_pods="never")
    for n, args in enumerate([("--dry",), ("-y",), ("--dry",), ("-y",)]):
        got = rehearsal.pyinfra(inv, BUDGET, *args, timeout=300)
        assert got.returncode == 1, (n, got.stderr)
        lines = host_lines(got.stderr, STS_HOST)
        blocked = [line for line in lines if line.startswith(WAIT) and ": blocked" in line and line.endswith(BLOCKED)]
        assert blocked, (n, "\n".join(lines))
        assert pod_uids(rehearsal) == pods
    assert sts(rehearsal)["spec"]["template"]["spec"]["containers"][0]["args"] == [*IMPLICIT, "--max-model-len",
                                                                                  "16384"]


def test_a_restore_under_never_dry_fails_as_y_does_and_so_does_a_rerun(rehearsal: Rehearsal,
                                                                       tmp_path: Path) -> None:
    bad_rollout(rehearsal, ON_DELETE)
    pods = pod_uids(rehearsal)
    inv = restore_inventory(tmp_path, "never")
    tail = BLOCKED.replace("llama-sts-0, llama-sts-1", "llama-sts-1")
    for n, (args, label) in enumerate([("--dry", "wait for revision 1 to roll out"),
                                       ("-y", "wait for revision 1 to roll out"),
                                       ("--dry", "finish the rollout of statefulset llm/llama-sts"),
                                       ("-y", "finish the rollout of statefulset llm/llama-sts")]):
        got = rehearsal.pyinfra(inv, RESTORE, args, timeout=300)
        assert got.returncode == 1, (n, got.stderr)
        lines = host_lines(got.stderr, STS_HOST)
        assert [line for line in lines if line.startswith(f"{label}: blocked") and line.endswith(tail)], (
            n, "\n".join(lines))
        assert pod_uids(rehearsal) == pods
        if n == 0:
            assert any(line.startswith("roll back statefulset llm/llama-sts from revision 2 to revision 1 (")
                       for line in lines), lines


def test_restores_wait_after_an_on_delete_rollback_plans_on_the_rollback(rehearsal: Rehearsal,
                                                                         tmp_path: Path) -> None:
    bad_rollout(rehearsal, ON_DELETE)  # llama-sts-0 Ready on revision 1, llama-sts-1 crash-looping on revision 2
    kept = pod_uids(rehearsal)["llama-sts-0"]
    inv = restore_inventory(tmp_path)
    dry = rehearsal.pyinfra(inv, RESTORE, "--dry")
    assert dry.returncode == 0, dry.stderr
    lines = host_lines(dry.stderr, STS_HOST)
    assert "noop: statefulset llm/llama-sts: its rollout is waited for above" in lines, lines
    assert not any("the change reaches a pod only when it is deleted" in line for line in lines), lines
    table = detected_changes(dry.stderr)
    assert table["Wait until the new pods are Ready"][0] == "-", table
    got = rehearsal.pyinfra(inv, RESTORE, "-y", timeout=300)
    assert got.returncode == 0, got.stderr
    said = host_lines(got.stderr, STS_HOST)
    assert deletions(said) == ["llama-sts-1"], said
    assert "noop: statefulset llm/llama-sts is rolled out" in said, said
    assert pod_uids(rehearsal)["llama-sts-0"] == kept
