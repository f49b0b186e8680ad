"""`vllm-remedy drift` over a fleet costs O(clusters + namespaces) API requests, not O(hosts): each namespace's
Deployments, ReplicaSets and pods are listed once, nodes, every pod and the clock once per cluster, and the only
per-host reads left are the logs of containers that crashed. Counted server-side on the rehearsal cluster, so
the figure ``bench/bench_drift.py`` reports (≤ 1.0 request per host at 500 hosts) is held here exactly."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from fixtures.drift_world import as_json
from fixtures.fleet_world import policy, start_fleet
from test_metrics_exporters import PUSHGATEWAY, _get, _serve
from vllm_remedy.metrics import DRIFT_DETECTED, parse_samples


@pytest.fixture
def pushgateway() -> Iterator[str]:
    yield from _serve(PUSHGATEWAY)

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
                                                     "inSync": 16, "drifted": 12, "fixRefused": 0, "errors": 0,
                                                     "unknown": 0}
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


def test_a_fleet_sharded_across_workers_covers_every_host_once(tmp_path: Path, cli, pushgateway: str) -> None:
    """Two workers, each ``--limit``-ed to one cluster, push to one Pushgateway under their own group: together
    they check every host exactly once, each reads only its cluster, and neither replaces the other's metrics."""
    fleet = start_fleet(tmp_path, clusters=2, namespaces=1, deployments=5)
    inventory = str(fleet.inventory(tmp_path, policy(tmp_path)))
    try:
        with ThreadPoolExecutor(2) as pool:
            shards = list(pool.map(lambda i: cli("drift", "-i", inventory, "-o", "json", "--limit", f"@k8s/c{i}/*",
                                                 "--pushgateway", pushgateway, "--push-group", f"shard={i}"), (0, 1)))
    finally:
        fleet.server.stop()
    docs = [as_json(s) for s in shards]
    assert [s.returncode for s in shards] == [1, 1], [s.stderr for s in shards]  # vllm-000 drifts in each
    checked = [h["host"] for d in docs for h in d["hosts"]]
    assert sorted(checked) == sorted(fleet.hosts) and len(checked) == len(set(checked)) == 10
    assert {(c, m) for c, m, _p in fleet.server.seen} == {("c0", "GET"), ("c1", "GET")}
    for i, doc in enumerate(docs):  # each shard read its own cluster only
        assert {h["host"].split("/")[1] for h in doc["hosts"]} == {f"c{i}"}
    scraped = _get(pushgateway + "/metrics")
    for i in (0, 1):
        drifted = parse_samples(scraped, DRIFT_DETECTED, {"job": "vllm-remedy-drift", "shard": str(i)})
        assert {labels[0] for labels in drifted} == {h for h in fleet.hosts if h.startswith(f"@k8s/c{i}/")}


def test_a_malformed_push_group_is_bad_input(tmp_path: Path, cli) -> None:
    got = cli("drift", "-i", str(tmp_path / "none.py"), "--push-group", "job=x")
    assert (got.returncode, got.stderr.strip()) == (
        2, "vllm-remedy: error: --push-group 'job=x': expected LABEL=VALUE (a Prometheus label name other than job)")
