#!/usr/bin/env python3
"""What durable acknowledgement costs: PATCH latency with the write-ahead log vs the old periodic flush.

Two SimServers in this process, identical but for ``durable``: **A** ``flush`` (state written about once
a second; a 2xx may not be on disk) and **B** ``wal`` (every 2xx waits for its fdatasync). Each serves
one cluster of ``--deployments`` Deployments (controllers not running: the API and its storage alone),
with its state folder under ``--dir`` (must be a real disk: on tmpfs fsync is free). Rounds alternate
A B / B A on one keep-alive connection per arm, so both see the same machine noise. Prints one JSON
document with median/p95 per arm and the B/A ratios.
"""

from __future__ import annotations

import argparse
import http.client
import json
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_sim_api import deployment  # the same 50 Deployments as the API bench (run as a script: bench/ on sys.path)

from vllm_remedy.sim.cluster import Cluster
from vllm_remedy.sim.server import SimServer

ARMS = ("flush", "wal")


def serve(arm: str, deployments: int, state: Path) -> tuple[SimServer, http.client.HTTPConnection]:
    cluster = Cluster(arm, speed=60)
    cluster.store.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "llm"},
                                        "status": {"phase": "Active"}})
    for d in range(deployments):
        cluster.store.create("deployments.apps", deployment(f"model-{d}"))
    server = SimServer([cluster], state_dir=state / arm, durable=arm == "wal")
    server.start()
    host, port = server.url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port))
    conn.connect()
    conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return server, conn


def patch(conn: http.client.HTTPConnection, arm: str, name: str, value: str) -> tuple[float, int]:
    body = json.dumps({"metadata": {"annotations": {"bench/round": value}}}).encode()
    started = time.perf_counter()
    conn.request("PATCH", f"/clusters/{arm}/apis/apps/v1/namespaces/llm/deployments/{name}", body=body,
                 headers={"Content-Type": "application/merge-patch+json", "Accept": "application/json"})
    resp = conn.getresponse()
    resp.read()
    return (time.perf_counter() - started) * 1000, resp.status


def summary(samples: list[float]) -> dict[str, float]:
    return {"median_ms": round(statistics.median(samples), 3),
            "p95_ms": round(statistics.quantiles(samples, n=20)[18], 3),
            "mean_ms": round(statistics.fmean(samples), 3)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--deployments", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--dir", type=Path, default=None, help="parent of the state folders (default: a temp dir)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        served = {arm: serve(arm, args.deployments, Path(tmp)) for arm in ARMS}
        latencies: dict[str, list[float]] = {arm: [] for arm in ARMS}
        errors = 0
        fsyncs_before = served["wal"][0].state.wals["wal"].fsyncs  # type: ignore[union-attr]
        for r in range(args.rounds):
            for arm in ARMS if r % 2 == 0 else ARMS[::-1]:
                conn = served[arm][1]
                for d in range(args.deployments):
                    ms, status = patch(conn, arm, f"model-{d}", str(r))
                    latencies[arm].append(ms)
                    errors += status != 200
        fsyncs = served["wal"][0].state.wals["wal"].fsyncs - fsyncs_before  # type: ignore[union-attr]
        for server, conn in served.values():
            conn.close()
            server.stop()
    result: dict[str, Any] = {"deployments": args.deployments, "rounds": args.rounds,
                              "patches_per_arm": len(latencies["wal"]), "errors": errors}
    for arm in ARMS:
        result[arm] = summary(latencies[arm])
    result["ratio_wal_over_flush"] = {key: round(result["wal"][key] / result["flush"][key], 2)
                                      for key in ("median_ms", "p95_ms", "mean_ms")}
    result["wal_fsyncs_per_patch"] = round(fsyncs / len(latencies["wal"]), 3)  # incl. checkpoints
    print(json.dumps(result, indent=2))
    return 0 if errors == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
