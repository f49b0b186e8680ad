#!/usr/bin/env python3
"""Benchmark the rehearsal cluster's API at fleet size: 10 clusters × 50 deployments × 2 replicas.

Measures, over HTTP on one keep-alive connection as kubectl does: the median time to list every
deployment of a namespace (JSON and kubectl's Table) and to merge-patch each deployment; then the
server process's CPU use while idle (controllers running, nothing asked). Targets from issue 4:
list and patch medians < 20 ms, idle < 1 core. Prints one JSON document.
"""

from __future__ import annotations

import argparse
import http.client
import json
import socket
import statistics
import sys
import time
from typing import Any

from vllm_remedy.sim.cluster import Cluster
from vllm_remedy.sim.server import SimServer

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


def node(name: str) -> dict[str, Any]:
    alloc = {"nvidia.com/gpu": "8", "cpu": "64", "memory": "512Gi", "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"nvidia.com/gpu.product": "NVIDIA-L40S"}},
            "status": {"capacity": alloc, "allocatable": alloc,
                       "conditions": [{"type": "Ready", "status": "True"}],
                       "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}]}}


def deployment(name: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "llm", "labels": {"app": name}},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{
                         "name": "vllm", "image": "vllm/vllm-openai:v0.8.5",
                         "args": ["--model", "meta-llama/Llama-3.1-8B-Instruct", "--max-model-len", "16384"],
                         "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}}}


def request(conn: http.client.HTTPConnection, method: str, path: str, body: Any = None,
            content_type: str = "application/json", accept: str = "application/json") -> tuple[float, int]:
    data = None if body is None else json.dumps(body).encode()
    started = time.perf_counter()
    conn.request(method, path, body=data, headers={"Content-Type": content_type, "Accept": accept})
    resp = conn.getresponse()
    resp.read()
    return (time.perf_counter() - started) * 1000, resp.status


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--clusters", type=int, default=10)
    parser.add_argument("--deployments", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--idle-seconds", type=float, default=5.0)
    args = parser.parse_args()

    setup = time.perf_counter()
    clusters = []
    for i in range(args.clusters):
        cluster = Cluster(f"c{i}", speed=60)
        cluster.store.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "llm"},
                                            "status": {"phase": "Active"}})
        for n in range(13):
            cluster.store.create("nodes", node(f"gpu-{n}"))
        cluster.start()
        for d in range(args.deployments):
            cluster.store.create("deployments.apps", deployment(f"model-{d}"))
        clusters.append(cluster)
    server = SimServer(clusters)
    server.start()
    want = args.deployments * 2
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        ready = [sum(1 for p in c.store.list("pods", "llm")[0]
                     if all(cs.get("ready") for cs in p.get("status", {}).get("containerStatuses") or [{}]))
                 for c in clusters]
        if all(r >= want for r in ready):
            break
        time.sleep(0.5)
    setup_s = time.perf_counter() - setup
    pods = sum(len(c.store.list("pods")[0]) for c in clusters)
    ready_pods = sum(ready)

    host, port = server.url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port))
    conn.connect()
    conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as Go's net/http and urllib3 do
    lists, tables, patches, errors = [], [], [], 0
    for r in range(args.rounds):
        for c in clusters:
            base = f"/clusters/{c.name}/apis/apps/v1/namespaces/llm/deployments"
            ms, status = request(conn, "GET", base + "?limit=500")
            lists.append(ms)
            errors += status != 200
            ms, status = request(conn, "GET", base + "?limit=500", accept=TABLE)
            tables.append(ms)
            errors += status != 200
            for d in range(args.deployments):
                body = {"metadata": {"annotations": {"bench/round": str(r)}}}
                ms, status = request(conn, "PATCH", f"{base}/model-{d}", body, "application/merge-patch+json")
                patches.append(ms)
                errors += status != 200
    time.sleep(2)  # let the controllers settle after the patches
    cpu0, wall0 = time.process_time(), time.perf_counter()
    time.sleep(args.idle_seconds)
    idle_cores = (time.process_time() - cpu0) / (time.perf_counter() - wall0)
    server.stop()
    for c in clusters:
        c.stop()
    result = {
        "clusters": args.clusters, "deployments_per_cluster": args.deployments, "pods": pods,
        "ready_pods": ready_pods,
        "setup_s": round(setup_s, 2),
        "list_deployments_median_ms": round(statistics.median(lists), 2),
        "list_deployments_p95_ms": round(statistics.quantiles(lists, n=20)[18], 2),
        "list_table_median_ms": round(statistics.median(tables), 2),
        "patch_median_ms": round(statistics.median(patches), 2),
        "patch_p95_ms": round(statistics.quantiles(patches, n=20)[18], 2),
        "requests": len(lists) + len(tables) + len(patches), "errors": errors,
        "idle_cpu_cores": round(idle_cores, 3),
    }
    print(json.dumps(result, indent=2))
    ok = (result["list_deployments_median_ms"] < 20 and result["patch_median_ms"] < 20 and idle_cores < 1.0
          and errors == 0)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
