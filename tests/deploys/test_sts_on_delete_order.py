"""How a StatefulSet's wait deletes pods under ``updateStrategy: OnDelete`` and ``restore.delete_pods: blocking``,
through the real pyinfra CLI: pods that serve nothing go first; a Ready pod of the old revision only once every
other pod is Ready on the update revision, one at a time, highest ordinal first — so the set keeps serving; never
onto a template a colleague wrote after ours; a rerun after kill -9 waits for the rollout still under way; and a
partition's line names the same pods in ``--dry`` and ``-y``."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from fixtures import pyinfra_run
from fixtures.budget_world import BUDGET
from fixtures.pyinfra_run import Rehearsal, crash_on_start, host_lines
from fixtures.restore_world import wait_until
from fixtures.sts_step4 import IMPLICIT, edit, env_fix, implicit_pending, live, quiet, rolled_out, with_args
from fixtures.sts_step4 import inventory as step4_inventory
from fixtures.sts_world import (
    MAX_LEN_LOG,
    RESTORE,
    STS_HOST,
    crash_looping_on,
    delete_pod,
    faster_once_deleted,
    inventory,
    killed_after_deleting_the_blocking_pod,
    llama_set,
    pod_uids,
    roll,
    sts,
)
from vllm_remedy.kube.health import pod_health

rehearsal = pyinfra_run.rehearsal
ON_DELETE = {"type": "OnDelete"}


@contextmanager
def fewest_ready(rehearsal: Rehearsal) -> Iterator[list[int]]:
    """Sample the set's Ready pods while the block runs; the list's one item is the fewest seen."""
    seen, stop = [99], threading.Event()
    client = rehearsal.client()

    def sample() -> None:
        while not stop.is_set():
            pods = client.list_pods("llm", "app=llama-sts")
            seen[0] = min(seen[0], sum(1 for p in pods if not p["metadata"].get("deletionTimestamp")
                                       and pod_health(p).ready))
            stop.wait(0.05)
    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield seen
    finally:
        stop.set()
        thread.join()


def three_revisions(rehearsal: Rehearsal) -> None:
    """OnDelete: llama-sts-0 serves revision 1; revision 2 (a colleague's env var) never ran; llama-sts-1 crash-loops
    on revision 3. The restore's target is revision 2: both pods are off it, one of them serving."""
    llama_set(rehearsal, ON_DELETE)
    edit(rehearsal, env_fix)
    quiet(rehearsal)
    roll(rehearsal, crash_on_start(MAX_LEN_LOG.read_text()))
    delete_pod(rehearsal, "llama-sts-1")
    crash_looping_on(rehearsal, "llama-sts-1")


def deletions(lines: list[str]) -> list[str]:
    return [line.split("deleted pod ", 1)[1].split()[0] for line in lines if "deleted pod " in line]


def test_a_template_change_deletes_the_ready_pods_one_at_a_time_highest_first(rehearsal: Rehearsal,
                                                                              tmp_path: Path) -> None:
    implicit_pending(rehearsal, ON_DELETE)
    before = pod_uids(rehearsal)
    with fewest_ready(rehearsal) as fewest:
        got = rehearsal.pyinfra(step4_inventory(tmp_path), BUDGET, "-y", timeout=300)
    assert got.returncode == 0, got.stderr
    lines = host_lines(got.stderr, STS_HOST)
    assert fewest[0] >= 1, f"the set went to {fewest[0]} Ready pods"
    assert deletions(lines) == ["llama-sts-1", "llama-sts-0"], lines
    rolled_out(rehearsal)
    assert set(pod_uids(rehearsal).values()).isdisjoint(before.values())


def test_a_restore_deletes_the_crash_looping_pod_first_and_keeps_the_serving_one(rehearsal: Rehearsal,
                                                                                 tmp_path: Path) -> None:
    three_revisions(rehearsal)
    dry = rehearsal.pyinfra(inventory(tmp_path), RESTORE, "--dry")
    order = ("then: the deletions: first llama-sts-1 (not Ready: they serve nothing); then the Ready pods one at a "
             "time, highest ordinal first (llama-sts-0), each once every other pod is Ready on the new revision; a "
             "replacement that crash-loops stops the run, and so does an edit of the template after this run's")
    assert order in host_lines(dry.stderr, STS_HOST), dry.stderr
    with fewest_ready(rehearsal) as fewest:
        got = rehearsal.pyinfra(inventory(tmp_path), RESTORE, "-y", timeout=300)
    assert got.returncode == 0, got.stderr
    lines = host_lines(got.stderr, STS_HOST)
    assert order in lines, lines
    assert fewest[0] >= 1, f"the set went to {fewest[0]} Ready pods"
    assert deletions(lines) == ["llama-sts-1", "llama-sts-0"], lines
    rolled_out(rehearsal)


def test_a_colleagues_edit_during_the_wait_stops_the_deletions(rehearsal: Rehearsal, tmp_path: Path) -> None:
    implicit_pending(rehearsal, ON_DELETE)
    kept = pod_uids(rehearsal)["llama-sts-0"]
    rehearsal.cluster.clock.set_speed(5.0)  # the replacement takes ~15 s of real time to load: time to edit
    err = tmp_path / "run.err"
    with err.open("w") as fe:
        run = subprocess.Popen([sys.executable, "-m", "pyinfra", step4_inventory(tmp_path), BUDGET, "-y"],
                               cwd=tmp_path, env=rehearsal.env(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=fe)
        try:
            wait_until(lambda: "deleted pod llama-sts-1" in err.read_text() or run.poll() is not None, 120,
                       "the run to delete its first pod")
            edit(rehearsal, env_fix)  # the colleague's template: a revision this run never showed
            rehearsal.cluster.clock.set_speed(60.0)
            assert run.wait(180) == 1, err.read_text()
        finally:
            if run.poll() is None:
                run.kill()
    lines = host_lines(err.read_text(), STS_HOST)
    assert any(line.endswith("statefulset llm/llama-sts edited after this run's write: not deleting pods for a "
                             "revision this run did not show") for line in lines), lines
    assert deletions(lines) == ["llama-sts-1"], lines
    assert pod_uids(rehearsal)["llama-sts-0"] == kept


def test_after_kill_9_an_on_delete_restore_rerun_waits_for_the_rollout(rehearsal: Rehearsal,
                                                                       tmp_path: Path) -> None:
    three_revisions(rehearsal)
    inv = inventory(tmp_path)
    rehearsal.cluster.clock.set_speed(5.0)  # the restored pod takes ~15 s of real time to load: killed mid-wait
    said = killed_after_deleting_the_blocking_pod(rehearsal, inv, tmp_path)
    assert int(sts(rehearsal)["status"].get("readyReplicas") or 0) < 2, said
    with fewest_ready(rehearsal) as fewest, faster_once_deleted(rehearsal, "llama-sts-0"):
        again = rehearsal.pyinfra(inv, RESTORE, "-y", timeout=180)
    assert again.returncode == 0, again.stderr
    lines = host_lines(again.stderr, STS_HOST)
    assert not any("nothing to restore" in line for line in lines), lines
    assert deletions(lines) == ["llama-sts-0"], lines  # once llama-sts-1 serves the restored revision
    assert fewest[0] >= 1, f"the set went to {fewest[0]} Ready pods"
    rehearsal.cluster.clock.set_speed(60.0)
    rolled_out(rehearsal)


def test_a_partition_names_the_same_pods_in_dry_and_y(rehearsal: Rehearsal, tmp_path: Path) -> None:
    implicit_pending(rehearsal, {"type": "RollingUpdate", "rollingUpdate": {"partition": 1}})
    said = ("then: updateStrategy RollingUpdate partition 1: the change replaces only pods with ordinal >= 1 "
            "(llama-sts-1); pods below it (llama-sts-0) keep the revision they run until the partition is lowered")
    inv = step4_inventory(tmp_path)
    dry = rehearsal.pyinfra(inv, BUDGET, "--dry")
    assert said in host_lines(dry.stderr, STS_HOST), dry.stderr
    got = rehearsal.pyinfra(inv, BUDGET, "-y", timeout=300)
    assert got.returncode == 0, got.stderr
    lines = host_lines(got.stderr, STS_HOST)
    assert said in lines and not any("(none)" in line for line in lines), lines
    assert len(live(rehearsal)) == 2


def test_a_replacement_that_crash_loops_stops_the_deletions(rehearsal: Rehearsal, tmp_path: Path) -> None:
    llama_set(rehearsal, ON_DELETE)

    def crashing(obj: dict) -> None:  # the colleague's edit no pod runs yet (OnDelete): it will crash on start
        with_args(IMPLICIT)(obj)
        obj["spec"]["template"]["metadata"]["annotations"] = crash_on_start(MAX_LEN_LOG.read_text())
    edit(rehearsal, crashing)
    quiet(rehearsal)
    kept = pod_uids(rehearsal)["llama-sts-0"]
    with fewest_ready(rehearsal) as fewest:
        got = rehearsal.pyinfra(step4_inventory(tmp_path), BUDGET, "-y", timeout=300)
    assert got.returncode == 1, got.stderr
    lines = host_lines(got.stderr, STS_HOST)
    assert deletions(lines) == ["llama-sts-1"], lines
    assert any(line.startswith("wait for statefulset llm/llama-sts to roll out: crash-loop after ")
               for line in lines), lines
    assert any("record" in line and "controllerrevision" in line for line in lines), lines
    assert pod_uids(rehearsal)["llama-sts-0"] == kept and fewest[0] >= 1
