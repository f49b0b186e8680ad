"""A colleague's template edit over a crash-looping StatefulSet revision, through the real pyinfra CLI: revision 2
(the runbook's bad rollout: --max-model-len dropped, moved to the 24 GB L4 pool) crash-loops on llama-sts-1, then
revision 3 = revision 2 plus an env var becomes the update revision, which no pod runs yet. Deleting llama-sts-1
would roll it onto revision 3, predicted to fail as revision 2 did: restore rolls back to revision 1 instead. A
revision 3 judged good is still not ours: the pod is named, never deleted onto it (the OnDelete ownership rule)."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path
from typing import Any

from fixtures import pyinfra_run
from fixtures.pyinfra_run import Rehearsal, host_lines
from fixtures.restore_world import wait_until
from fixtures.sts_world import (
    RESTORE,
    STS_HOST,
    STS_PATH,
    bad_rollout,
    crash_looping_on,
    delete_pod,
    inventory,
    llama_set,
    pod_uids,
    revision_names,
    sts,
)
from vllm_remedy.kube.client import JSON_PATCH
from vllm_remedy.kube.health import pod_health
from vllm_remedy.kube.history import templates_equal
from vllm_remedy.kube.patch import json_patch
from vllm_remedy.kube.sts_wait import NOT_OURS

rehearsal = pyinfra_run.rehearsal
L4 = {"cloud.google.com/gke-accelerator": "nvidia-l4"}
NAMED = f"statefulset llm/llama-sts: pods llama-sts-1 stay on their revision: {NOT_OURS}"


def edit(rehearsal: Rehearsal, change: Any) -> None:
    client = rehearsal.client()
    current = client.request("GET", STS_PATH)
    new = copy.deepcopy(current)
    change(new["spec"]["template"]["spec"])
    client.request("PATCH", STS_PATH, body=json_patch(current, new), content_type=JSON_PATCH)


def bad_then_edited(rehearsal: Rehearsal) -> dict[str, Any]:
    """Revision 1 good, revision 2 crash-looping on llama-sts-1, revision 3 (2 + an env var) the update revision."""
    good = llama_set(rehearsal)

    def bad(spec: dict[str, Any]) -> None:
        args = spec["containers"][0]["args"]
        at = args.index("--max-model-len")
        spec["containers"][0]["args"] = args[:at] + args[at + 2:]
        spec["nodeSelector"] = dict(L4)
        spec["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    edit(rehearsal, bad)
    crash_looping_on(rehearsal, "llama-sts-1")
    edit(rehearsal, lambda spec: spec["containers"][0].setdefault("env", []).append({"name": "LOG_LEVEL",
                                                                                     "value": "debug"}))
    # the controller writes revision 3's ControllerRevision after the edit, not with it
    wait_until(lambda: sorted(revision_names(rehearsal)) == [1, 2, 3], 30, "revision 3 to be recorded")
    assert sorted(revision_names(rehearsal)) == [1, 2, 3]
    return good


def test_pods_are_not_deleted_onto_an_update_revision_predicted_to_fail(rehearsal: Rehearsal, tmp_path: Path) -> None:
    good = bad_then_edited(rehearsal)
    inv = inventory(tmp_path)
    dry = rehearsal.pyinfra(inv, RESTORE, "--dry")
    assert dry.returncode == 0, dry.stderr
    lines = host_lines(dry.stderr, STS_HOST)
    back = "roll back statefulset llm/llama-sts from revision 3 to revision 1 ("
    assert any(line.startswith(back) for line in lines), dry.stderr
    assert any("revision 3 (" in line and "the update revision pods llama-sts-1 would roll onto when deleted: predicted"
               in line for line in lines), lines
    applied = rehearsal.pyinfra(inv, RESTORE, "-y", timeout=300)
    assert applied.returncode == 0, applied.stderr
    said = host_lines(applied.stderr, STS_HOST)
    assert any("deleted pod llama-sts-1" in line for line in said), said
    after = sts(rehearsal)
    assert templates_equal(after["spec"]["template"], good["spec"]["template"])
    assert after["status"]["readyReplicas"] == 2


def fixed_by_a_colleague(rehearsal: Rehearsal) -> None:
    """Revision 2 (crash-on-start annotations) crash-loops on llama-sts-1; revision 3 = revision 1 plus an env var."""
    bad_rollout(rehearsal)
    client = rehearsal.client()
    current = client.request("GET", STS_PATH)
    fixed = copy.deepcopy(current)
    fixed["spec"]["template"]["metadata"].pop("annotations")
    fixed["spec"]["template"]["spec"]["containers"][0].setdefault("env", []).append({"name": "LOG_LEVEL",
                                                                                     "value": "debug"})
    client.request("PATCH", STS_PATH, body=json_patch(current, fixed), content_type=JSON_PATCH)


def test_pods_are_not_deleted_onto_a_colleagues_update_revision_even_judged_good(rehearsal: Rehearsal,
                                                                                 tmp_path: Path) -> None:
    """The colleague's edit fixes it (revision 3 = revision 1 plus an env var), but it is not our write: as under
    OnDelete, the blocking pod is named, not deleted, under OrderedReady too — --dry and -y alike exit 0, list no
    change and leave llama-sts-1 as it is; rolling their revision out is for whoever reviews it."""
    fixed_by_a_colleague(rehearsal)
    inv = inventory(tmp_path)  # restore.delete_pods: blocking — the policy would delete, the ownership rule does not
    pods = pod_uids(rehearsal)
    before = sts(rehearsal)
    for flag in ("--dry", "-y"):
        got = rehearsal.pyinfra(inv, RESTORE, flag, timeout=300)
        assert got.returncode == 0, (flag, got.stderr)
        said = host_lines(got.stderr, STS_HOST)
        assert f"noop: {NAMED}" in said, (flag, "\n".join(said))
        assert not any("deleted pod" in line for line in said), said
        assert pod_uids(rehearsal) == pods, flag
        assert sts(rehearsal)["spec"] == before["spec"] and sts(rehearsal)["metadata"].get("annotations") == \
            before["metadata"].get("annotations"), flag


def test_once_the_colleague_deletes_the_pod_a_rerun_waits_until_ready(rehearsal: Rehearsal, tmp_path: Path) -> None:
    """Their revision rolled out by them (llama-sts-1 deleted after review): while the new pod is still loading a
    rerun must not say "nothing to restore", but wait until it is Ready, deleting nothing."""
    fixed_by_a_colleague(rehearsal)
    inv = inventory(tmp_path)
    clock = rehearsal.cluster.clock
    clock.set_speed(5.0)  # the new pod takes ~15 s of real time to load: the rerun starts before it is Ready
    old = pod_uids(rehearsal)["llama-sts-1"]
    delete_pod(rehearsal, "llama-sts-1")
    assert rehearsal.cluster.wait_for(lambda: pod_uids(rehearsal).get("llama-sts-1", old) != old, 30)
    err = tmp_path / "rerun.err"
    with err.open("w") as fe:
        run = subprocess.Popen([sys.executable, "-m", "pyinfra", inv, RESTORE, "-y"],
                               cwd=tmp_path, env=rehearsal.env(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=fe)
        try:
            # Fast-forward only once the rerun has read the set and planned (pyinfra's operation run begins): at 60x
            # from the start, a loaded machine's pyinfra start-up let the pod become Ready before the rerun read it.
            wait_until(lambda: "Beginning operation run" in err.read_text() or run.poll() is not None, 120,
                       "the rerun to plan")
            clock.set_speed(60.0)
            assert run.wait(180) == 0, err.read_text()
        finally:
            if run.poll() is None:
                run.kill()
    said = host_lines(err.read_text(), STS_HOST)
    assert not any("nothing to restore" in line or "deleted pod" in line for line in said), said
    assert any(line.startswith("wait for statefulset llm/llama-sts to roll out: ") and "complete" in line
               for line in said), said
    assert sts(rehearsal)["status"]["readyReplicas"] == 2


def test_a_pod_that_cannot_be_scheduled_fails_the_wait_with_the_schedulers_reason(rehearsal: Rehearsal,
                                                                                  tmp_path: Path) -> None:
    """Revision 2 crash-loops on the L4 pool; meanwhile llama-8b takes every free L40S card. The rollback
    to revision 1 needs an L40S: its pod stays Pending, and the wait says why at once instead of timing out."""
    bad_then_edited(rehearsal)
    rehearsal.change(lambda d: d["spec"].__setitem__("replicas", 8))  # every free L40S goes to someone else

    def full() -> bool:  # the scheduler placed all it could: a llama-8b pod waits for a GPU
        return any(pod_health(p).unschedulable for p in rehearsal.client().list_pods("llm", "app=llama-8b"))
    assert rehearsal.cluster.wait_for(full, 30)
    got = rehearsal.pyinfra(inventory(tmp_path), RESTORE, "-y", timeout=120)
    assert got.returncode != 0
    said = host_lines(got.stderr, STS_HOST)
    [failed] = [line for line in said if "to roll out: " in line and "after" in line]
    assert ": unschedulable after " in failed and "Insufficient nvidia.com/gpu" in failed, said
    assert "timed out" not in got.stderr


def test_an_update_revision_judged_good_that_crash_loops_is_rolled_back_by_the_rerun(rehearsal: Rehearsal,
                                                                                   tmp_path: Path) -> None:
    """Revision 3 = revision 2 (which crash-loops by its annotations, not by its flags) plus an env var: nothing
    predicts it fails, but it is not our write, so llama-sts-1 is named, not deleted onto it; once the colleague
    deletes it and it crash-loops on revision 3, the rerun rolls back to revision 1."""
    good = bad_rollout(rehearsal)
    edit(rehearsal, lambda spec: spec["containers"][0].setdefault("env", []).append({"name": "LOG_LEVEL",
                                                                                     "value": "debug"}))
    inv = inventory(tmp_path)
    first = rehearsal.pyinfra(inv, RESTORE, "-y", timeout=300)
    assert first.returncode == 0, first.stderr
    said = host_lines(first.stderr, STS_HOST)
    assert f"noop: {NAMED}" in said and not any("deleted pod" in line for line in said), said
    delete_pod(rehearsal, "llama-sts-1")  # the colleague rolls their revision out
    crash_looping_on(rehearsal, "llama-sts-1")
    again = rehearsal.pyinfra(inv, RESTORE, "-y", timeout=300)
    assert again.returncode == 0, again.stderr
    assert any(line.startswith("roll back statefulset llm/llama-sts from revision 3 to revision 1 (")
               for line in host_lines(again.stderr, STS_HOST)), again.stderr
    good["spec"]["template"]["metadata"].pop("annotations", None)
    after = sts(rehearsal)
    after["spec"]["template"]["metadata"].pop("annotations", None)
    assert templates_equal(after["spec"]["template"], good["spec"]["template"])
    assert after["status"]["readyReplicas"] == 2
