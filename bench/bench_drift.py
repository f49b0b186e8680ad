#!/usr/bin/env python3
"""Benchmark `vllm-remedy drift` over a fleet: clusters × namespaces × vLLM Deployments on one rehearsal server.

The fleet is tests/fixtures/fleet_world.py's (the one tests/commands/test_drift_fleet.py counts): objects written
straight into each cluster's store, controllers not started, one pod per Deployment (every 7th crash-looping,
so its log is read) unless ``--no-pods``. Every request is counted server-side. Reports the CLI run's wall time,
the CPU seconds and peak RSS of its processes, API requests per host (by method and by path shape) and the exit
code. ``--limit`` checks one shard (pyinfra's host patterns); ``--profile FILE`` runs the drift runner (what the CLI
starts as ``python -m vllm_remedy.drift``) under cProfile instead. A benchmark, not a test: prints one JSON document.

    .venv/bin/python bench/bench_drift.py [--clusters 10] [--deployments 50] [--namespaces 1] [--limit PATTERN]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from fixtures.fleet_world import policy, start_fleet


def _children() -> tuple[float, float]:
    """CPU seconds (user + system) of waited-for child processes so far, and their largest peak RSS in MiB."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime, used.ru_maxrss / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clusters", type=int, default=10)
    parser.add_argument("--deployments", type=int, default=50, help="per namespace")
    parser.add_argument("--namespaces", type=int, default=1, help="per cluster")
    parser.add_argument("--no-pods", action="store_true", help="Deployments only (the fleet before 2026-12-03)")
    parser.add_argument("--limit", action="append", default=[], help="check only these hosts (a shard)")
    parser.add_argument("--profile", help="write the drift runner's cProfile stats here")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-drift-"))
    fleet = start_fleet(tmp, args.clusters, args.namespaces, args.deployments, pods=not args.no_pods)
    inventory = fleet.inventory(tmp, policy(tmp))
    env = {**os.environ, "HOME": str(tmp)}
    env.pop("KUBECONFIG", None)
    argv = [sys.executable, "-m", "vllm_remedy", "drift", "-i", str(inventory), "-o", "json"]
    if args.profile:  # the runner the CLI starts, run directly under cProfile (its JSON has no status block)
        argv = [sys.executable, "-m", "cProfile", "-o", str(Path(args.profile).resolve()), "-m", "vllm_remedy.drift",
                "plan", "-i", str(inventory)]
    for pattern in args.limit:
        argv += ["--limit", pattern]
    fleet.server.seen.clear()
    cpu_before, _ = _children()
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp)
    wall = time.perf_counter() - started
    cpu_after, peak = _children()
    fleet.server.stop()
    doc = json.loads(done.stdout) if done.stdout.strip() else {}
    checked = (doc.get("status") or {}).get("hosts") or len(fleet.hosts)
    total = sum(fleet.server.seen.values())
    by_method: collections.Counter[str] = collections.Counter()
    for (_cluster, method, _path), n in fleet.server.seen.items():
        by_method[method] += n
    print(json.dumps({
        "clusters": args.clusters, "namespaces_per_cluster": args.namespaces,
        "deployments_per_cluster": args.deployments * args.namespaces, "hosts": checked,
        "pods": 0 if args.no_pods else len(fleet.hosts), "crashing_pods": fleet.crashing, "limit": args.limit,
        "exit_code": done.returncode, "status": doc.get("status"), "wall_seconds": round(wall, 2),
        "runner_seconds": (doc.get("metadata") or {}).get("seconds"), "cpu_seconds": round(cpu_after - cpu_before, 2),
        "peak_rss_mib": round(peak, 1), "api_requests": total, "api_requests_per_host": round(total / checked, 3),
        "api_requests_by_method": dict(by_method),
        "api_requests_by_path": {f"{m} {p}": n for (m, p), n in sorted(fleet.server.by_path().items())},
        "cpus": os.cpu_count(), "load_average": [round(x, 1) for x in os.getloadavg()],
        "stderr_tail": done.stderr.strip().splitlines()[-3:] if done.returncode not in (0, 1) else []}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
