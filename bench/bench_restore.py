#!/usr/bin/env python3
"""Benchmark runbook step 1: ``deploys/restore.py`` vs ``kubectl rollout undo`` + ``rollout status``.

Both arms face the same simulated incident on a fresh rehearsal cluster per trial (the runbook seed,
then the bad revision from tests/fixtures/restore_world.py: --max-model-len dropped, moved to the L4 pool,
Recreate → every pod crash-loops with vLLM's KV-cache error). Arms alternate A/B, B/A, ... in one run
because the machine is shared and noisy; the ratio of medians comes from the same run.

  A  kubectl -n llm rollout undo deploy/llama-8b && kubectl -n llm rollout status deploy/llama-8b --timeout=15m
     (undo goes to "previous" — here that is the good revision, so A is the best case for kubectl)
  B  python -m pyinfra inventories/local.py deploys/restore.py -y
     (reads pods and crash logs, classifies, picks the known-good revision by rule, writes a guarded
     JSON patch, waits failing fast on crash-loops)
  C  ansible-playbook: kubernetes.core.k8s_rollback (to the previous revision, as kubectl undo) + k8s_info
     wait (until the Deployment's replicas are updated and available), from the bench's own virtual environment
     (``--ansible-venv``, default .venv-ansible; see bench/README.md for installing it)

``--scenario two-bad`` lands a second bad revision (16) on top of 15 before the arm runs: "previous" is then
bad too. Waits are bounded by 15 cluster minutes (kubectl's and ansible's timeouts are real seconds, so they
are given 900 / speed).

Per trial: wall seconds of the command(s); when the Deployment was first rolled out on the good
template, in real seconds and in cluster seconds since the command started (polled in-process, so
the poll costs no API request); the split of that into deciding (command start → first write, real
seconds: process start-up, reads, classification) and rolling out (first write → Ready, cluster
seconds); how long the process ran on after Ready; API requests the command made (counted by wrapping the server's
dispatch). Prints one JSON document.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from fixtures.pyinfra_run import Rehearsal, start_rehearsal  # noqa: E402
from fixtures.restore_world import (  # noqa: E402
    LOCAL,
    NAME,
    NS,
    RESTORE,
    bad_revision,
    crash_looping,
    incident,
    pods,
    wait_until,
)
from vllm_remedy.kube.history import templates_equal  # noqa: E402

KUBECTLS = ("/usr/lib/google-cloud-sdk/bin/kubectl.1.32", str(ROOT / ".tools/kubernetes-client/usr/bin/kubectl"))


@dataclass
class Trial:
    """One arm on one fresh incident."""

    arm: str
    wall_s: float
    ready_real_s: float | None
    ready_sim_s: float | None
    #: command start → first write, real seconds (process start-up, reads, classification)
    decide_real_s: float | None
    #: first write → rolled out, cluster seconds (the rollout itself: scheduling, image, model load)
    rollout_sim_s: float | None
    requests: dict[str, int] = field(default_factory=dict)
    exit_codes: list[int] = field(default_factory=list)


def count_requests(rehearsal: Rehearsal, marks: dict[str, float]) -> Counter[str]:
    """Wrap the server's dispatch so every HTTP request is counted by method (the sim has no counter).

    The first write's moment goes into ``marks`` (``write_real``/``write_sim``, absolute): it splits a
    command's time into deciding (process start, reads) and the rollout itself.
    """
    counts: Counter[str] = Counter()
    server = rehearsal.server
    original = server.dispatch

    def counting(req: Any) -> Any:
        counts[req.method] += 1
        if req.method in ("PATCH", "PUT", "POST") and "write_real" not in marks:
            marks["write_real"], marks["write_sim"] = time.perf_counter(), rehearsal.cluster.clock.now()
        return original(req)

    server.dispatch = counting  # type: ignore[method-assign]
    return counts


def watch_ready(rehearsal: Rehearsal, good: dict[str, Any], started: float, sim_started: float,
                stop: threading.Event) -> dict[str, float]:
    """Start a thread noting the first moment the Deployment is rolled out on the good template."""
    cluster = rehearsal.cluster
    seen: dict[str, float] = {}

    def poll() -> None:
        while not stop.is_set():
            dep = cluster.store.find("deployments.apps", NS, NAME)
            if dep is not None and templates_equal(dep["spec"]["template"], good) and cluster.rolled_out(NS, NAME):
                seen["real"] = time.perf_counter() - started
                seen["sim"] = cluster.clock.now() - sim_started
                return
            time.sleep(0.01)

    threading.Thread(target=poll, daemon=True).start()
    return seen


PLAYBOOK = """\
- hosts: localhost
  gather_facts: false
  tasks:
    - name: Roll back to the previous revision
      kubernetes.core.k8s_rollback:
        api_version: apps/v1
        kind: Deployment
        name: {name}
        namespace: {ns}
    - name: Wait until rolled out
      kubernetes.core.k8s_info:
        api_version: apps/v1
        kind: Deployment
        name: {name}
        namespace: {ns}
        wait: true
        wait_timeout: {timeout}
"""


def second_bad_revision(dep: dict[str, Any]) -> None:
    """Revision 16: revision 15's mistakes plus one more flag, so "previous" (15) is bad as well."""
    bad_revision(dep)
    dep["spec"]["template"]["spec"]["containers"][0]["args"] += ["--max-num-seqs", "512"]


def run_arm(arm: str, rehearsal: Rehearsal, kubectl: str, *, speed: float = 60.0, scenario: str = "one-bad",
            ansible: Path | None = None) -> Trial:
    """Land the incident, then time arm A (kubectl), B (pyinfra restore.py) or C (ansible) until it exits."""
    good = rehearsal.client().get_deployment(NS, NAME)["spec"]["template"]  # the seed's healthy revision
    incident(rehearsal)
    if scenario == "two-bad":
        rehearsal.change(second_bad_revision, change_cause="also raise --max-num-seqs")
        wait_until(lambda: all("512" in p["spec"]["containers"][0]["args"] for p in pods(rehearsal))
                   and crash_looping(rehearsal), timeout=60, what="revision 16 to crash-loop")
    env = rehearsal.env()
    limit = max(1, round(900 / speed))  # 15 cluster minutes, in the real seconds kubectl and ansible count
    marks: dict[str, float] = {}
    counts = count_requests(rehearsal, marks)
    commands: list[list[str]]
    if arm == "A":
        base = [kubectl, "-n", NS]
        commands = [[*base, "rollout", "undo", f"deploy/{NAME}"],
                    [*base, "rollout", "status", f"deploy/{NAME}", f"--timeout={limit}s"]]
    elif arm == "C":
        assert ansible is not None
        playbook = rehearsal.tmp / "rollback.yml"
        playbook.write_text(PLAYBOOK.format(name=NAME, ns=NS, timeout=limit))
        env = {**env, "ANSIBLE_COLLECTIONS_PATH": str(ansible / "collections"), "ANSIBLE_NOCOLOR": "1",
               "ANSIBLE_LOCALHOST_WARNING": "false", "ANSIBLE_INVENTORY_UNPARSED_WARNING": "false"}
        commands = [[str(ansible / "bin" / "ansible-playbook"), "-i", "localhost,", "-c", "local",
                     "-e", f"ansible_python_interpreter={ansible / 'bin' / 'python'}", str(playbook)]]
    else:
        commands = [[sys.executable, "-m", "pyinfra", LOCAL, RESTORE, "-y"]]
    stop = threading.Event()
    started, sim_started = time.perf_counter(), rehearsal.cluster.clock.now()
    seen = watch_ready(rehearsal, good, started, sim_started, stop)
    codes = []
    for command in commands:
        done = subprocess.run(command, env=env, cwd=rehearsal.tmp, capture_output=True, text=True, timeout=900)
        codes.append(done.returncode)
        if done.returncode != 0:
            print(f"{arm}: {' '.join(command[:3])}... exit {done.returncode}: {done.stderr[-400:]}", file=sys.stderr)
            break
    wall = time.perf_counter() - started
    time.sleep(0.2)  # a Ready that lands as the command exits is still noted
    stop.set()
    decide = round(marks["write_real"] - started, 3) if marks else None
    rollout = round(seen["sim"] + sim_started - marks["write_sim"], 1) if marks and "sim" in seen else None
    return Trial(arm, round(wall, 3), round(seen["real"], 3) if "real" in seen else None,
                 round(seen["sim"], 1) if "sim" in seen else None, decide, rollout, dict(counts), codes)


def fresh(speed: float) -> Callable[[], Rehearsal]:
    def make() -> Rehearsal:
        return start_rehearsal(Path(tempfile.mkdtemp(prefix="bench-restore-")), speed=speed)
    return make


def median(values: list[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return round(statistics.median(kept), 3) if kept else None


def summarise(trials: list[Trial], arm: str) -> dict[str, Any]:
    mine = [t for t in trials if t.arm == arm]
    requests = [sum(t.requests.values()) for t in mine]
    return {"n": len(mine), "wall_s_median": median([t.wall_s for t in mine]),
            "wall_s_min": min(t.wall_s for t in mine), "wall_s_max": max(t.wall_s for t in mine),
            "ready_real_s_median": median([t.ready_real_s for t in mine]),
            "ready_sim_s_median": median([t.ready_sim_s for t in mine]),
            "decide_real_s_median": median([t.decide_real_s for t in mine]),
            "rollout_sim_s_median": median([t.rollout_sim_s for t in mine]),
            "exit_after_ready_real_s_median": median([t.wall_s - t.ready_real_s for t in mine
                                                      if t.ready_real_s is not None]),
            # on a real (1x) cluster the rollout takes the same cluster seconds and deciding the same real ones
            "projected_ready_s_at_1x": (round(median([t.decide_real_s for t in mine]) +  # type: ignore[operator]
                                              median([t.rollout_sim_s for t in mine]), 1)
                                        if all(t.decide_real_s is not None and t.rollout_sim_s is not None
                                               for t in mine) else None),
            "api_requests_median": median(requests),
            "failures": sum(1 for t in mine if any(c != 0 for c in t.exit_codes) or t.ready_sim_s is None)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=5, help="trials per arm (alternating A/B)")
    parser.add_argument("--speed", type=float, default=60.0, help="cluster seconds per real second")
    parser.add_argument("--kubectl", default=next((k for k in KUBECTLS if os.access(k, os.X_OK)), "kubectl"))
    parser.add_argument("--arms", default="AB", help="which arms, in the order of the first trial (e.g. ABC)")
    parser.add_argument("--scenario", choices=("one-bad", "two-bad"), default="one-bad")
    parser.add_argument("--ansible-venv", default=str(ROOT / ".venv-ansible"),
                        help="virtual environment with ansible-core, kubernetes and collections/kubernetes.core")
    args = parser.parse_args()
    version = subprocess.run([args.kubectl, "version", "--client", "-o", "json"], capture_output=True, text=True)
    trials: list[Trial] = []
    ansible = Path(args.ansible_venv).resolve() if "C" in args.arms else None
    for i in range(args.trials):
        for arm in (args.arms if i % 2 == 0 else args.arms[::-1]):
            rehearsal = fresh(args.speed)()
            try:
                trial = run_arm(arm, rehearsal, args.kubectl, speed=args.speed, scenario=args.scenario,
                                ansible=ansible)
            finally:
                rehearsal.stop()
            trials.append(trial)
            print(json.dumps(asdict(trial)), file=sys.stderr)
    arms = {arm: summarise(trials, arm) for arm in args.arms}
    a, b = arms.get("A"), arms.get("B")
    result: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "scenario": args.scenario,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}, "
                   f"Python {platform.python_version()}",
        "speed": args.speed,
        "kubectl": json.loads(version.stdout or "{}").get("clientVersion", {}).get("gitVersion", args.kubectl),
        "A_kubectl_undo_status": a, "B_pyinfra_restore": b, "C_ansible_k8s_rollback": arms.get("C"),
        "trials": [asdict(t) for t in trials],
    }
    if a and b and a["wall_s_median"] and b["wall_s_median"]:
        result["ratio_wall_B_over_A"] = round(b["wall_s_median"] / a["wall_s_median"], 2)
    print(json.dumps(result, indent=2))
    return 0 if all(s["failures"] == 0 for s in arms.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
