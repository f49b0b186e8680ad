"""deploys/restore.py with ``-y`` under the faults that break promises, through a chaos proxy on 127.0.0.1.

Invariants, each asserted on the cluster after the run (not on what the tool said):
- a colleague's edit that lands between the plan's reads and the write is refused, never overwritten;
- a PATCH whose answer is lost, or that the network delivers twice, is one template change, reported as
  written, and the wait runs;
- after ``kill -9`` mid-wait a rerun resumes the wait instead of saying "No changes" over 0/1 pods.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fixtures import pyinfra_run
from fixtures.chaos_proxy import DROP_RESPONSE, DUPLICATE, HOOK, LATE_COMMIT, ChaosProxy, Rule
from fixtures.pyinfra_run import CLUSTER, Rehearsal, start_rehearsal
from fixtures.restore_world import (
    LOCAL,
    NAME,
    NS,
    RESTORE,
    deployment,
    host_out,
    incident,
    replicaset,
    wait_until,
    with_grace,
)
from vllm_remedy.kube.history import templates_equal
from vllm_remedy.sim import kubeconfig as sim_kubeconfig

rehearsal = pyinfra_run.rehearsal
DEPLOYMENT = r"/apis/apps/v1/namespaces/llm/deployments/llama-8b(\?|$)"
CHANGE_ID = "vllm-remedy.io/change-id"


def through(proxy: ChaosProxy, world: Rehearsal) -> dict[str, str]:
    """The environment of a user whose kubeconfig points at the proxy instead of the API server."""
    path = sim_kubeconfig.write(world.tmp / "kubeconfig-chaos", proxy.url, [CLUSTER])
    return {"KUBECONFIG": str(path)}


@pytest.fixture
def proxy(rehearsal: Rehearsal) -> Iterator[ChaosProxy]:
    chaos = ChaosProxy(rehearsal.server.url).start()
    yield chaos
    chaos.stop()


def colleague(world: Rehearsal) -> None:
    """An on-call colleague's own fix, straight to the API server (not through the proxy): a template change."""
    def edit(dep: dict[str, Any]) -> None:
        env = dep["spec"]["template"]["spec"]["containers"][0].setdefault("env", [])
        env.append({"name": "COLLEAGUE_FIX", "value": "1"})
    world.change(edit)


def the_writes_own_read(trace: list[tuple[str, str]]) -> int:
    """Which GET of the Deployment (1-based) is the write's own fresh read in a clean run's ``trace``.

    The write reads the object, then the cluster's clock (``GET /version``), then sends the PATCH (kubectl's
    undo reads the ReplicaSets in between); the operation body's planning reads all come before that read.
    """
    patch = next(i for i, (m, p) in enumerate(trace) if m == "PATCH" and re.search(DEPLOYMENT, p))
    clock = max(i for i, (m, p) in enumerate(trace[:patch]) if m == "GET" and p.endswith("/version"))
    assert trace[clock - 1][0] == "GET" and re.search(DEPLOYMENT, trace[clock - 1][1]), trace[clock - 3:patch + 1]
    return sum(1 for m, p in trace[:clock] if m == "GET" and re.search(DEPLOYMENT, p))


def test_with_y_an_edit_between_the_plans_reads_and_the_write_is_refused(rehearsal: Rehearsal,
                                                                          proxy: ChaosProxy, tmp_path: Path) -> None:
    # 1. learn where the write's own read of the Deployment falls in a clean -y run of the same incident
    incident(rehearsal)
    clean = rehearsal.pyinfra(LOCAL, RESTORE, "-y", env=through(proxy, rehearsal))
    assert clean.returncode == 0, clean.stderr
    nth = the_writes_own_read(proxy.trace)
    # 2. the same incident on a second cluster; the colleague's edit lands right before that read
    other = start_rehearsal(tmp_path / "b")
    chaos = ChaosProxy(other.server.url, rules=[Rule("GET", DEPLOYMENT, HOOK, on=[nth],
                                                     hook=lambda: colleague(other))]).start()
    try:
        incident(other)
        before = deployment(other)
        got = other.pyinfra(LOCAL, RESTORE, "-y", env=through(chaos, other))
        after = deployment(other)
    finally:
        chaos.stop()
        other.stop()
    assert chaos.faults(HOOK) == 1
    assert the_writes_own_read(chaos.trace) == nth  # the edit landed right before the write's own read
    assert got.returncode == 1, got.stderr
    said = host_out(got.stderr)
    assert any("deployment llm/llama-8b changed since it was read (HTTP 422); nothing was written" in line
               for line in said), said
    env = after["spec"]["template"]["spec"]["containers"][0]["env"]
    assert {"name": "COLLEAGUE_FIX", "value": "1"} in env  # their fix stands
    assert after["spec"]["template"]["spec"]["nodeSelector"] == before["spec"]["template"]["spec"]["nodeSelector"]
    assert CHANGE_ID not in after["metadata"]["annotations"]  # nothing of ours was written


@pytest.mark.parametrize("action", [DROP_RESPONSE, DUPLICATE])
def test_a_lost_or_doubled_patch_is_one_write_reported_as_written_and_the_wait_runs(
        rehearsal: Rehearsal, proxy: ChaosProxy, action: str) -> None:
    incident(rehearsal)
    good = replicaset(rehearsal, 14)
    before = deployment(rehearsal)
    proxy.rules = [Rule("PATCH", DEPLOYMENT, action, on=[1])]
    got = rehearsal.pyinfra(LOCAL, RESTORE, "-y", env=through(proxy, rehearsal))
    assert proxy.faults(action) == 1
    assert got.returncode == 0, got.stderr
    said = host_out(got.stderr)
    assert any(": written (resourceVersion " in line for line in said), said
    assert not any("nothing was written" in line for line in said), said
    waited = [line for line in said if line.startswith("wait for revision 14's template to roll out: ")]
    assert len(waited) == 1 and "successfully rolled out" in waited[0], said
    after = deployment(rehearsal)
    assert templates_equal(after["spec"]["template"], good["spec"]["template"])
    assert after["metadata"]["generation"] == before["metadata"]["generation"] + 1  # one template change


def test_a_patch_committed_after_its_504_is_reported_written_and_the_wait_runs(rehearsal: Rehearsal,
                                                                              proxy: ChaosProxy) -> None:
    """Every PATCH is answered 504 "context deadline exceeded" at once and reaches the API 4 s later."""
    incident(rehearsal)
    good = replicaset(rehearsal, 14)
    before = deployment(rehearsal)
    proxy.rules = [Rule("PATCH", DEPLOYMENT, LATE_COMMIT, probability=1.0, seconds=4.0)]
    got = rehearsal.pyinfra(with_grace(rehearsal.tmp, "20s"), RESTORE, "-y", env=through(proxy, rehearsal))
    assert proxy.faults(LATE_COMMIT) >= 1
    said = host_out(got.stderr)
    assert got.returncode == 0, got.stderr
    assert not any("nothing was written" in line for line in said), said
    assert any(": written (resourceVersion " in line for line in said), said
    waited = [line for line in said if line.startswith("wait for revision 14's template to roll out: ")]
    assert len(waited) == 1 and "successfully rolled out" in waited[0], said
    after = deployment(rehearsal)
    assert templates_equal(after["spec"]["template"], good["spec"]["template"])
    assert after["metadata"]["generation"] == before["metadata"]["generation"] + 1  # one template change


def test_a_patch_committed_after_the_grace_period_is_unknown_and_the_rerun_resumes_the_wait(
        rehearsal: Rehearsal, proxy: ChaosProxy) -> None:
    incident(rehearsal)
    rehearsal.cluster.clock.set_speed(5.0)  # the restored pods load slowly: the rerun finds the rollout under way
    before = deployment(rehearsal)
    proxy.rules = [Rule("PATCH", DEPLOYMENT, LATE_COMMIT, probability=1.0, seconds=10.0)]
    got = rehearsal.pyinfra(with_grace(rehearsal.tmp, "1s"), RESTORE, "-y", env=through(proxy, rehearsal))
    said = host_out(got.stderr)
    assert got.returncode == 1, got.stderr
    assert not any("nothing was written" in line for line in said), said
    unknown = [line for line in said if "outcome unknown: the API did not answer; change " in line]
    assert len(unknown) == 1 and "may still land — rerun to see" in unknown[0], said
    change_id = re.search(r"change ([0-9a-f]{16}) may still land", unknown[0])
    assert change_id, unknown
    wait_until(lambda: deployment(rehearsal)["metadata"]["annotations"].get(CHANGE_ID) == change_id[1], 30,
               "the late commit")
    wait_until(lambda: bool(proxy.landed), 30, "the proxy to record the late commit")  # it books after forwarding
    assert (("PATCH", proxy.landed[0][1], 200) == proxy.landed[0]), proxy.landed  # the first attempt landed
    written = deployment(rehearsal)
    assert written["metadata"]["generation"] == before["metadata"]["generation"] + 1
    text = rerun_speeding_up_at_its_wait(rehearsal)
    again = host_out(text)
    resumed = [line for line in again if line.startswith("wait for deployment llm/llama-8b to roll out (last "
                                                         "vllm-remedy write: restore at ")]
    assert len(resumed) == 1 and "successfully rolled out" in resumed[0], again
    after = deployment(rehearsal)
    assert after["metadata"]["generation"] == written["metadata"]["generation"]  # resumed, not written again
    assert int(after["status"]["readyReplicas"]) == int(after["spec"]["replicas"])


def rerun_speeding_up_at_its_wait(rehearsal: Rehearsal) -> str:
    """Rerun restore with ``-y`` while the pods still load (slow clock), speed the cluster up once the rerun
    waits, and return what it printed (it must exit 0)."""
    err = rehearsal.tmp / "rerun.err"
    with err.open("w") as fe:
        rerun = subprocess.Popen([sys.executable, "-m", "pyinfra", LOCAL, RESTORE, "-y"], cwd=rehearsal.tmp,
                                 env=rehearsal.env(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=fe)
        try:
            wait_until(lambda: "Starting operation: Wait until the new pods are Ready" in err.read_text()
                       or rerun.poll() is not None, 120, "the rerun to reach its wait")
            rehearsal.cluster.clock.set_speed(60.0)
            rerun.wait(timeout=180)
        finally:
            if rerun.poll() is None:
                rerun.kill()
    text = err.read_text()
    assert rerun.returncode == 0, text
    return text


def test_after_kill_9_mid_wait_a_rerun_resumes_the_wait(rehearsal: Rehearsal) -> None:
    incident(rehearsal)
    clock = rehearsal.cluster.clock
    clock.set_speed(5.0)  # the restored pods take ~15 s of real time to load: long enough to kill the run mid-wait
    run = subprocess.Popen([sys.executable, "-m", "pyinfra", LOCAL, RESTORE, "-y"], cwd=rehearsal.tmp,
                           env=rehearsal.env(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: CHANGE_ID in deployment(rehearsal)["metadata"]["annotations"], 60, "the rollback write")
        time.sleep(0.5)
    finally:
        run.send_signal(signal.SIGKILL)
        run.wait()
    written = deployment(rehearsal)
    ready = int((written.get("status") or {}).get("readyReplicas") or 0)
    assert ready < int(written["spec"]["replicas"]), written["status"]  # killed before Ready
    said = host_out(rerun_speeding_up_at_its_wait(rehearsal))
    resumed = [line for line in said if line.startswith("wait for deployment llm/llama-8b to roll out (last "
                                                        "vllm-remedy write: restore at ")]
    assert len(resumed) == 1 and "successfully rolled out" in resumed[0], said
    after = deployment(rehearsal)
    assert after["metadata"]["generation"] == written["metadata"]["generation"]  # resumed, not written again
    assert after["metadata"]["annotations"][CHANGE_ID] == written["metadata"]["annotations"][CHANGE_ID]
    assert int(after["status"]["readyReplicas"]) == int(after["spec"]["replicas"])
    assert NS and NAME  # the Deployment every read above named
