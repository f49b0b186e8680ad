"""The runbook incident on the rehearsal cluster, shared by the deploy tests (no tests of its own).

Revision 14 of the seed is the good one (vLLM 0.8.5, --max-model-len 16384 on NVIDIA-L40S). The incident
adds revision 15: --max-model-len dropped (the model default, 131072) and the nodeSelector moved to the
24 GB NVIDIA-L4 pool with the toleration its taint needs. The vLLM simulator then crash-loops it with
vLLM's own "max seq len ... larger than the available KV cache memory" error. The strategy is Recreate
so, as in the runbook, every pod is down and the rollback has to start pods from scratch.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pyinfra_fixtures import ROOT, Rehearsal, inventory, plain
from vllm_remedy.sim.vllm_pod import VllmRuntime

NS, NAME = "llm", "llama-8b"
HOST = "@k8s/rehearsal/llm/llama-8b"
RESTORE = str(ROOT / "deploys" / "restore.py")
DIAGNOSE = str(ROOT / "deploys" / "diagnose.py")
CONFIRM = str(ROOT / "deploys" / "confirm.py")
LOCAL = inventory("local")
#: Revision 15: the same pinned model revision, --max-model-len dropped (the model's 131072 default).
BAD_ARGS = ["meta-llama/Llama-3.1-8B-Instruct", "--revision", "0e9e39f249a16976918f6564b8830bc894c89659",
            "--gpu-memory-utilization", "0.90", "--max-num-seqs", "64"]
L4_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def vllm_runtime(rehearsal: Rehearsal) -> None:
    """Guard: the rehearsal cluster runs vLLM containers with the vLLM simulator (its default), so a
    crash-loop test can never pass on bare containers; its Date header is the cluster's clock."""
    assert all(isinstance(cluster.runtime, VllmRuntime) for cluster in rehearsal.clusters.values())


def bad_revision(dep: dict[str, Any]) -> None:
    spec = dep["spec"]["template"]["spec"]
    spec["containers"][0]["args"] = list(BAD_ARGS)
    spec["nodeSelector"] = {"cloud.google.com/gke-accelerator": "nvidia-l4"}
    spec["tolerations"] = [dict(L4_TOLERATION)]
    dep["spec"]["strategy"] = {"type": "Recreate"}


def pods(rehearsal: Rehearsal) -> list[dict[str, Any]]:
    return rehearsal.client().list_pods(NS, "app=llama-8b")


def wait_until(predicate: Any, timeout: float = 30.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def crash_looping(rehearsal: Rehearsal, count: int = 2) -> bool:
    """``count`` pods of the newest revision restarting after failures (the incident has landed)."""
    found = 0
    for pod in pods(rehearsal):
        for status in pod["status"].get("containerStatuses") or []:
            waiting = (status.get("state") or {}).get("waiting") or {}
            if waiting.get("reason") == "CrashLoopBackOff" or status.get("restartCount", 0) >= 2:
                found += 1
    return found >= count


def incident(rehearsal: Rehearsal) -> dict[str, Any]:
    """Roll out the bad revision 15 and wait until its pods crash-loop; returns the Deployment as it then is."""
    vllm_runtime(rehearsal)
    rehearsal.change(bad_revision, change_cause="drop --max-model-len; move to the L4 pool")
    wait_until(lambda: crash_looping(rehearsal), what="revision 15 to crash-loop")
    return rehearsal.client().get_deployment(NS, NAME)


def replicaset(rehearsal: Rehearsal, revision: int) -> dict[str, Any]:
    for rs in rehearsal.client().list_replicasets(NS, "app=llama-8b"):
        if rs["metadata"]["annotations"].get("deployment.kubernetes.io/revision") == str(revision):
            return rs
    raise AssertionError(f"no ReplicaSet for revision {revision}")


def host_out(text: str) -> list[str]:
    """Lines pyinfra printed for the incident host, prefix removed."""
    prefix = f"[{HOST}]"
    return [line.split(prefix, 1)[1].strip() for line in plain(text).splitlines() if prefix in line]


def write_inventory(tmp: Path, host: str = HOST, **data: Any) -> str:
    """An inventory file with one host and its data (for bad-input tests)."""
    path = tmp / "inv.py"
    path.write_text(f"hosts = ([{host!r}], {data!r})\n")
    return str(path)


def deployment(rehearsal: Rehearsal) -> dict[str, Any]:
    return rehearsal.client().get_deployment(NS, NAME)


def quiet(rehearsal: Rehearsal, seconds: float = 0.5, timeout: float = 20.0) -> dict[str, Any]:
    """The Deployment once its resourceVersion stopped moving for ``seconds`` (status writes are over)."""
    last, since, deadline = deployment(rehearsal), time.monotonic(), time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(0.1)
        now = deployment(rehearsal)
        if now["metadata"]["resourceVersion"] != last["metadata"]["resourceVersion"]:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= seconds:
            return now
    raise AssertionError("the Deployment never settled")


def settled(rehearsal: Rehearsal, quiet_for: float = 0.6, timeout: float = 20.0) -> dict[str, Any]:
    """The crash-looping Deployment once its status stops moving: past its progress deadline, then ``quiet``.

    The controller writes status all through a crash loop until the progress deadline passes (600 s of
    cluster time); a "nothing changed" assertion on resourceVersion needs that to be over first.
    """
    def timed_out() -> bool:
        status = deployment(rehearsal).get("status") or {}
        return any(c.get("reason") == "ProgressDeadlineExceeded" for c in status.get("conditions") or [])

    wait_until(timed_out, timeout, "the crash-looping rollout to pass its progress deadline")
    return quiet(rehearsal, quiet_for, timeout)


def assert_no_changes(rehearsal: Rehearsal, deploy: str, ops: int, *args: str,
                          before: dict[str, Any] | None = None) -> None:
    """Idempotency (docs/architecture.md, "Contracts"): ``deploy`` on a host already in its desired state
    yields no commands — each of its ``ops`` operations prints "No changes" — and writes nothing (same
    resourceVersion as ``before``, by default the Deployment once quiet)."""
    before = quiet(rehearsal) if before is None else before
    got = rehearsal.pyinfra(LOCAL, deploy, "-y", *args)
    assert got.returncode == 0, got.stderr
    assert host_out(got.stderr).count("No changes") == ops, got.stderr
    assert deployment(rehearsal)["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


#: The Deployment's API path, as the client's retry lines name it.
PATH = f"/apis/apps/v1/namespaces/{NS}/deployments/{NAME}"
#: Every PATCH of the Deployment answers 503: an outage the write itself must ride out.
PATCH_DOWN = {"verb": "patch", "resource": "deployments", "error_rate": 1.0, "error_code": 503}


def run_with_outage(rehearsal: Rehearsal, deploy: str, args: Sequence[str], flaky: list[dict[str, Any]]
                    ) -> subprocess.CompletedProcess[str]:
    """``pyinfra -y`` while every PATCH answers 503 (plus ``flaky``); once our client has met one and is backing
    off, the outage ends and only ``flaky`` stays — so a 5xx on the write itself is always exercised (seeded
    random rates alone may never hit the one PATCH a deploy sends)."""
    err = rehearsal.tmp / "outage.err"
    rehearsal.faults([PATCH_DOWN, *flaky])
    with err.open("w") as fe:
        proc = subprocess.Popen([sys.executable, "-m", "pyinfra", LOCAL, deploy, "-y", *args],
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=fe, text=True,
                                env=rehearsal.env(), cwd=str(rehearsal.tmp))
        try:
            wait_until(lambda: f"PATCH {PATH}: HTTP 503; retrying" in err.read_text() or proc.poll() is not None,
                       60, "the first failed PATCH")
            rehearsal.faults(flaky)
            out, _ = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
            rehearsal.faults([])
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err.read_text())
