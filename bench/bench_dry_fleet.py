#!/usr/bin/env python3
"""Benchmark a fleet-wide ``--dry``: 10 clusters × 50 vLLM Deployments, one pyinfra run, 500 hosts.

One process serves every cluster (SimServer), each cluster a kubeconfig context. Each cluster holds 50
Llama-3.1-8B Deployments (vLLM 0.8.5, --max-model-len 16384, 1 replica, no GPU pin) on seven 8×L40S
nodes, all Ready before timing starts. The inventory lists ``@k8s/c<i>/llm/model-<d>`` for every one
(or, with ``--expand``, the namespace form ``@k8s/c<i>/llm``) under a policy extending llama-8b's.

Timed: ``python -m pyinfra INVENTORY deploys/<deploy> --dry`` for the whole fleet and for one host (the
fixed cost of start-up), ``--runs`` times each, alternating. Per-host time = (fleet − one host) / (hosts − 1).
API requests are counted by wrapping the server's dispatch (the sim has no counter). Prints one JSON
document; exit 1 if a run failed or a Deployment changed.
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
import time
from collections import Counter
from pathlib import Path
from typing import Any

from vllm_remedy.sim import kubeconfig as sim_kubeconfig
from vllm_remedy.sim.cluster import Cluster
from vllm_remedy.sim.controllers.manager import wait_until
from vllm_remedy.sim.server import SimServer

ROOT = Path(__file__).resolve().parent.parent
ARGS = ["meta-llama/Llama-3.1-8B-Instruct", "--max-model-len", "16384", "--gpu-memory-utilization", "0.90",
        "--max-num-seqs", "64"]


def seed(deployments: int, nodes: int) -> dict[str, Any]:
    """The rehearsal seed format: 8-GPU L40S nodes and ``deployments`` one-replica vLLM Deployments."""
    node = {"instanceType": "g6e.48xlarge", "cpu": "192", "memory": "1536Gi",
            "gpu": {"product": "NVIDIA-L40S", "memoryMiB": 46068, "count": 8, "family": "ada-lovelace"}}
    deps = []
    for d in range(deployments):
        name = f"model-{d}"
        deps.append({"manifest": {
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "llm", "labels": {"app": name}},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}}, "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{
                    "name": "vllm", "image": "vllm/vllm-openai:v0.8.5", "command": ["vllm", "serve"],
                    "args": list(ARGS), "ports": [{"name": "http", "containerPort": 8000}],
                    "resources": {"requests": {"cpu": "4", "memory": "24Gi"},
                                  "limits": {"memory": "32Gi", "nvidia.com/gpu": "1"}},
                    "readinessProbe": {"httpGet": {"path": "/health", "port": 8000}, "periodSeconds": 5}}]}}}}})
    return {"namespaces": ["llm"], "nodes": [dict(node, name=f"gpu-l40s-{n}") for n in range(nodes)],
            "deployments": deps}


def write_inventory(tmp: Path, clusters: list[str], deployments: int, policy: Path, *, expand: bool,
                    limit: int | None = None) -> Path:
    """An inventory naming every host explicitly (or per namespace), policy as group data."""
    if expand:
        hosts = [f"@k8s/{c}/llm" for c in clusters]
    else:
        hosts = [f"@k8s/{c}/llm/model-{d}" for c in clusters for d in range(deployments)]
    hosts = hosts[:limit] if limit else hosts
    path = tmp / (f"fleet-{limit}.py" if limit else "fleet.py")
    path.write_text(f'"""Bench fleet ({len(hosts)} host entries)."""\n\n'
                    f"fleet = ({hosts!r}, {{'policy': {str(policy)!r}}})\n")
    return path


def pyinfra(inventory: Path, deploy: str, env: dict[str, str], cwd: Path) -> tuple[float, int, str]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pyinfra", str(inventory), deploy, "--dry"], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=3600)
    return time.perf_counter() - started, done.returncode, done.stderr


def generations(clusters: list[Cluster]) -> dict[str, int]:
    return {f"{c.name}/{d['metadata']['name']}": int(d["metadata"].get("generation", 0))
            for c in clusters for d in c.store.list("deployments.apps", "llm")[0]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clusters", type=int, default=10)
    parser.add_argument("--deployments", type=int, default=50)
    parser.add_argument("--nodes", type=int, default=7, help="8-GPU nodes per cluster")
    parser.add_argument("--deploy", default="budget.py", help="file under deploys/")
    parser.add_argument("--runs", type=int, default=3, help="fleet runs (each preceded by a one-host run)")
    parser.add_argument("--speed", type=float, default=60.0)
    parser.add_argument("--expand", action="store_true", help="namespace form @k8s/<cluster>/llm per cluster")
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="bench-fleet-"))
    setup = time.perf_counter()
    world = seed(args.deployments, args.nodes)
    clusters = []
    for i in range(args.clusters):
        cluster = Cluster(f"c{i}", speed=args.speed)
        cluster.start()
        cluster.apply_seed(world, wait=False)  # the seed waits per Deployment; wait for all at once below
        clusters.append(cluster)
    names = [f"model-{d}" for d in range(args.deployments)]
    if not wait_until(lambda: all(c.rolled_out("llm", n) for c in clusters for n in names), 900):
        print("the fleet never became Ready", file=sys.stderr)
        return 1
    server = SimServer(clusters)
    counts: Counter[str] = Counter()
    original = server.dispatch

    def counting(req: Any) -> Any:
        counts[req.method] += 1
        return original(req)

    server.dispatch = counting  # type: ignore[method-assign]
    server.start()
    setup_s = time.perf_counter() - setup
    contexts = [c.name for c in clusters]
    kubeconfig = sim_kubeconfig.write(tmp / "kubeconfig", server.url, contexts)
    policy = tmp / "fleet-policy.yaml"
    policy.write_text(f"extends: {ROOT / 'policies' / 'llama-8b'}\n"
                      "target: {namespaces: [llm], deployments: [], models: [meta-llama/Llama-3.1-8B-Instruct]}\n")
    fleet = write_inventory(tmp, contexts, args.deployments, policy, expand=args.expand)
    one = write_inventory(tmp, contexts, args.deployments, policy, expand=False, limit=1)
    env = {k: v for k, v in os.environ.items() if k != "XDG_STATE_HOME"}
    env.update({"KUBECONFIG": str(kubeconfig), "HOME": str(tmp), "PYINFRA_PROGRESS": "off", "NO_COLOR": "1"})
    deploy = str(ROOT / "deploys" / args.deploy)
    before = generations(clusters)
    hosts = args.clusters * args.deployments
    runs: list[dict[str, Any]] = []
    failed = 0
    for r in range(args.runs):
        for kind, inventory in ((("one", one), ("fleet", fleet)) if r % 2 == 0 else (("fleet", fleet), ("one", one))):
            counts.clear()
            wall, code, stderr = pyinfra(inventory, deploy, env, tmp)
            failed += code != 0
            if code != 0:
                print(f"{kind} run exit {code}: {stderr[-1500:]}", file=sys.stderr)
            runs.append({"kind": kind, "wall_s": round(wall, 2), "exit": code, "requests": dict(counts)})
            print(json.dumps(runs[-1]), file=sys.stderr)
            (tmp / f"{kind}-{r}.log").write_text(stderr)
    changed = sum(1 for k, g in generations(clusters).items() if before.get(k) != g)
    server.stop()
    for c in clusters:
        c.stop()
    fleet_wall = statistics.median(x["wall_s"] for x in runs if x["kind"] == "fleet")
    one_wall = statistics.median(x["wall_s"] for x in runs if x["kind"] == "one")
    fleet_requests = statistics.median(sum(x["requests"].values()) for x in runs if x["kind"] == "fleet")
    one_requests = statistics.median(sum(x["requests"].values()) for x in runs if x["kind"] == "one")
    result = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}, "
                   f"Python {platform.python_version()}",
        "deploy": f"deploys/{args.deploy} --dry", "inventory": "namespace form" if args.expand else "explicit hosts",
        "clusters": args.clusters, "deployments_per_cluster": args.deployments, "hosts": hosts,
        "setup_s": round(setup_s, 1), "runs": args.runs,
        "fleet_wall_s_median": fleet_wall, "one_host_wall_s_median": one_wall,
        "per_host_s": round((fleet_wall - one_wall) / max(hosts - 1, 1), 4),
        "fleet_requests_median": fleet_requests, "one_host_requests_median": one_requests,
        "requests_per_host": round(fleet_requests / hosts, 1),
        "deployments_changed": changed, "failed_runs": failed, "log_dir": str(tmp), "detail": runs,
    }
    print(json.dumps(result, indent=2))
    return 0 if failed == 0 and changed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
