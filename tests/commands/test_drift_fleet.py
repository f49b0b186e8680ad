"""`vllm-remedy drift` over a fleet costs O(clusters + namespaces) API requests, not O(hosts): each namespace's
Deployments, ReplicaSets and pods are listed once, nodes, every pod and the clock once per cluster, and the only
per-host reads left are the logs of containers that crashed. Counted server-side on the rehearsal cluster, so
the figure ``bench/bench_drift.py`` reports (≤ 1.0 request per host at 500 hosts) is held here exactly."""

from __future__ import annotations

from pathlib import Path

from fixtures.drift_world import as_json
from fixtures.fleet_world import policy, start_fleet

#: Per namespace: Deployments, ReplicaSets, pods. Per cluster: nodes, every pod (GPU holders), the clock.
PER_NAMESPACE = {("GET", f"/apis/apps/v1/namespaces/{{ns}}/{r}") for r in ("deployments", "replicasets")} | {
    ("GET", "/api/v1/namespaces/{ns}/pods")}
PER_CLUSTER = {("GET", "/api/v1/nodes"), ("GET", "/api/v1/pods"), ("GET", "/version")}


def test_fleet_drift_requests_grow_with_namespaces_and_crashes_not_hosts(tmp_path: Path, cli) -> None:
    fleet = start_fleet(tmp_path, clusters=2, namespaces=2, deployments=7)
    try:
        got = cli("drift", "-i", str(fleet.inventory(tmp_path, policy(tmp_path))), "-o", "json")
    finally:
        fleet.server.stop()
    doc = as_json(got)
    assert got.returncode == 1, got.stderr  # every fifth Deployment has no --max-model-len: drift, not an error
    assert doc["status"] | {"exitCodes": None} == {"result": "Drift", "exitCode": 1, "exitCodes": None, "hosts": 28,
                                                     "inSync": 16, "drifted": 12, "errors": 0, "unknown": 0}
    crash = {h["host"]: c["status"] for h in doc["hosts"] for c in h["checks"] if c["check"] == "crash-loop"}
    assert sorted(h for h, status in crash.items() if status != "pass") == [
        f"@k8s/c{i}/ns{j}/vllm-006" for i in range(2) for j in range(2)]

    expected = {(m, p.format(ns=ns)): 2 for m, p in PER_NAMESPACE for ns in ("ns0", "ns1")}  # × 2 clusters
    expected |= dict.fromkeys(PER_CLUSTER, 2)
    expected[("GET", "/api/v1/namespaces/{ns}/pods/*/log".format(ns="ns0"))] = 2  # the crashed container's
    expected[("GET", "/api/v1/namespaces/{ns}/pods/*/log".format(ns="ns1"))] = 2  # last words, one per crash
    assert fleet.server.by_path() == expected
    assert fleet.crashing == 4
    # 28 hosts, 30 requests: 12 per cluster and namespace, 6 per cluster, 4 logs. At bench_drift.py's 10 clusters ×
    # 50 Deployments in one namespace that is 6 × 10 + crashed logs for 500 hosts: ≤ 1.0 per host with up to 440.
    assert sum(expected.values()) == 2 * 2 * 3 + 2 * 3 + fleet.crashing
