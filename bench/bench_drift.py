#!/usr/bin/env python3
"""Benchmark `vllm-remedy drift` over a fleet: 10 clusters × 50 vLLM Deployments served by one rehearsal server.

Objects are written straight into each cluster's store (controllers not started: the drift check reads
Deployments, nodes and pods, so only the API is exercised). Every request is counted server-side by method.
Reports wall time of the whole CLI run, API requests per host (and per method) and the exit code.
A benchmark, not a test: prints one JSON document.

    .venv/bin/python bench/bench_drift.py [--clusters 10] [--deployments 50]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from vllm_remedy.sim.cluster import Cluster
from vllm_remedy.sim.server import SimServer

ROOT = Path(__file__).resolve().parent.parent
MODEL = "meta-llama/Llama-3.1-8B-Instruct"


class CountingServer(SimServer):
    """Counts every request it answers: (cluster, method)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.seen: collections.Counter[tuple[str, str]] = collections.Counter()

    def dispatch(self, req: Any) -> Any:
        parts = req.path.split("/", 3)
        self.seen[(parts[2] if len(parts) > 2 and parts[1] == "clusters" else "", req.method)] += 1
        return super().dispatch(req)


def node(name: str) -> dict[str, Any]:
    alloc = {"nvidia.com/gpu": "8", "cpu": "64", "memory": "512Gi", "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"nvidia.com/gpu.product": "NVIDIA-L40S"}},
            "status": {"capacity": alloc, "allocatable": alloc, "conditions": [{"type": "Ready", "status": "True"}],
                       "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}]}}


def deployment(name: str, drifted: bool) -> dict[str, Any]:
    args = [MODEL, "--gpu-memory-utilization", "0.90"] + ([] if drifted else ["--max-model-len", "16384"])
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "llm", "labels": {"app": name}},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": {
                         "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"},
                         "containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.8.5",
                                         "command": ["vllm", "serve"], "args": args,
                                         "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--clusters", type=int, default=10)
    parser.add_argument("--deployments", type=int, default=50)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-drift-"))
    clusters = [Cluster(f"c{i}") for i in range(args.clusters)]
    for c in clusters:
        c.store.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "llm"},
                                      "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}})
        for n in range(4):
            c.store.create("nodes", node(f"gpu-{n}"))
        for d in range(args.deployments):
            c.store.create("deployments.apps", deployment(f"vllm-{d:03d}", drifted=d % 5 == 0))
    server = CountingServer(clusters)
    server.start()
    kubeconfig = server.write_kubeconfig(tmp / "kubeconfig")
    policy = tmp / "policy.yaml"
    policy.write_text(f"extends: {ROOT / 'policies' / 'default'}\n"
                      "flags:\n  max-model-len: {max: 16384, preferred: 16384}\ngpu:\n  products: [NVIDIA-L40S]\n")
    hosts = [f"@k8s/c{i}/llm/vllm-{d:03d}" for i in range(args.clusters) for d in range(args.deployments)]
    inventory = tmp / "fleet.py"
    inventory.write_text(f"fleet = ({hosts!r}, {{'kubeconfig': {str(kubeconfig)!r}, 'policy': {str(policy)!r}}})\n")
    env = {**os.environ, "HOME": str(tmp)}
    env.pop("KUBECONFIG", None)
    server.seen.clear()
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "vllm_remedy", "drift", "-i", str(inventory), "-o", "json"],
                          capture_output=True, text=True, env=env, cwd=tmp)
    wall = time.perf_counter() - started
    server.stop()
    doc = json.loads(done.stdout) if done.stdout.strip() else {}
    total = sum(server.seen.values())
    by_method: collections.Counter[str] = collections.Counter()
    for (_cluster, method), n in server.seen.items():
        by_method[method] += n
    print(json.dumps({
        "clusters": args.clusters, "deployments_per_cluster": args.deployments, "hosts": len(hosts),
        "exit_code": done.returncode, "status": doc.get("status"), "wall_seconds": round(wall, 2),
        "runner_seconds": (doc.get("metadata") or {}).get("seconds"),
        "api_requests": total, "api_requests_per_host": round(total / len(hosts), 2),
        "api_requests_by_method": dict(by_method), "cpus": os.cpu_count(),
        "stderr_tail": done.stderr.strip().splitlines()[-3:] if done.returncode not in (0, 1) else []}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
