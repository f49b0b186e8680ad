"""Real kubectl 1.32 against a compressed cluster clock: ages read as cluster ages, nothing in its future.

At 600x the cluster clock is minutes ahead of the wall clock kubectl compares against; the server moves
every time it serves kubectl onto the wall clock (``reader_clock``), so client-side ages are never
``<invalid>`` and agree with the server-side ones.
"""

from __future__ import annotations

import json
import re
import time
from email.utils import parsedate_to_datetime
from typing import Any

import pytest

from fixtures import sim_world
from vllm_remedy.sim.clock import parse_timestamp

runbook_sim = sim_world.runbook_sim
V = "32"
VLLM_STAMP = re.compile(r"(?<=^INFO )\d\d-\d\d \d\d:\d\d:\d\d ")
UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400, "y": 365 * 86400}


@pytest.fixture(autouse=True)
def _need_kubectl() -> None:
    sim_world.require_kubectl(V)


def _age(text: str) -> tuple[int, int]:
    """kubectl's HumanDuration as a [low, high) range of seconds (``15m`` is 15:00 to 15:59)."""
    parts = re.findall(r"(\d+)([smhdy])", text)
    assert parts and "".join(n + u for n, u in parts) == text, text
    low = sum(int(n) * UNIT[u] for n, u in parts)
    return low, low + UNIT[parts[-1][1]]


def _stamps(doc: Any) -> list[str]:
    if isinstance(doc, dict):
        return [v for k, v in doc.items() if isinstance(v, str) and re.search(r"(Time|Timestamp|At)$", k)
                ] + [s for k, v in doc.items() if k != "annotations" for s in _stamps(v)]
    if isinstance(doc, list):
        return [s for item in doc for s in _stamps(item)]
    return []


def test_kubectl_reads_cluster_ages_on_its_wall_clock_at_600x(runbook_sim):
    k = runbook_sim.kubectl
    cluster = runbook_sim.clusters["a"]
    clock, store = cluster.clock, cluster.store

    def live() -> list[dict[str, Any]]:
        return [p for p in store.list("pods", "llm")[0] if not p["metadata"].get("deletionTimestamp")]

    time.sleep(1.0)  # ten cluster minutes pass
    gone = live()[0]["metadata"]["name"]
    assert k(V, "-n", "llm", "delete", "pod", gone, "--wait=false").returncode == 0
    assert cluster.wait_for(lambda: len(live()) == 2 and gone not in {p["metadata"]["name"] for p in live()}, 20)
    time.sleep(0.5)  # the replacement is five cluster minutes old
    assert clock.now() - time.time() > 600  # the cluster clock is over ten minutes ahead of kubectl's

    created = {p["metadata"]["name"]: parse_timestamp(p["metadata"]["creationTimestamp"]) for p in live()}
    before = clock.now()
    runs = {args: k(V, "-n", "llm", *args, timeout=30) for args in (
        ("get", "pods"), ("get", "pods", "--server-print=false"), ("get", "events"), ("describe", "pods"))}
    node = live()[0]["spec"]["nodeName"]
    runs[("describe", "node")] = k(V, "describe", "node", node, timeout=30)
    after = clock.now()
    for args, run in runs.items():
        assert run.returncode == 0, (args, run.stderr)
        assert "<invalid>" not in run.stdout and "<unknown>" not in run.stdout, (args, run.stdout)

    for args in (("get", "pods"), ("get", "pods", "--server-print=false")):
        rows = [line.split() for line in runs[args].stdout.splitlines()[1:]]
        assert sorted(r[0] for r in rows) == sorted(created), runs[args].stdout
        for row in rows:  # the client-side age is the pod's cluster age, as the server-side table prints it
            low, high = _age(row[-1])
            assert low <= after - created[row[0]] + 1 and high >= before - created[row[0]] - 1, (args, row)
    oldest = min(parse_timestamp(e.get("lastTimestamp") or e["metadata"]["creationTimestamp"])
                 for e in store.list("events", "llm")[0])
    seen = [_age(line.split()[0]) for line in runs[("get", "events")].stdout.splitlines()[1:]]
    assert seen and all(0 <= low <= after - oldest + 1 for low, _ in seen), runs[("get", "events")].stdout
    node_pods = [line.split() for line in runs[("describe", "node")].stdout.splitlines() if " llm " in line]
    for row in node_pods:
        low, high = _age(row[-1])
        assert low <= after - created[row[1]] + 1 and high >= before - created[row[1]] - 1, row

    # nothing kubectl is shown lies in its future: objects, describe's Start Time, log stamps, the Date header
    doc = json.loads(k(V, "-n", "llm", "get", "pods", "-o", "json", timeout=30).stdout)
    wall = time.time()
    stamps = _stamps(doc)
    assert len(stamps) > 6 and max(parse_timestamp(s) for s in stamps) <= wall + 1, stamps
    starts = re.findall(r"Start Time:\s+(.+)", runs[("describe", "pods")].stdout)
    assert len(starts) == 2 and all(parsedate_to_datetime(s).timestamp() <= wall + 1 for s in starts), starts
    logs = k(V, "-n", "llm", "logs", "deploy/llama-8b", "--timestamps", timeout=30).stdout.splitlines()
    assert logs and max(parse_timestamp(line.split(" ", 1)[0]) for line in logs) <= time.time() + 1
    # the same lines without the prefix; vLLM's own stamp is on the wall clock too, so it moved between the reads
    assert [VLLM_STAMP.sub("", line, count=1) for line in k(
        V, "-n", "llm", "logs", "deploy/llama-8b", "--since=8760h", timeout=30).stdout.splitlines()] == [
        VLLM_STAMP.sub("", line.split(" ", 1)[1], count=1) for line in logs]
    raw = k(V, "get", "--raw", "/version", "-v=8", timeout=30)
    date = re.search(r"Date: (.+ GMT)", raw.stderr)
    assert date, raw.stderr[-2000:]
    assert abs(parsedate_to_datetime(date.group(1)).timestamp() - time.time()) < 5


def test_automation_keeps_the_cluster_clock(runbook_sim):
    """The project's client measures the runbook's durations from ``Date``: only a person's tools are moved."""
    from vllm_remedy.kube.client import KubeClient

    clock = runbook_sim.clusters["a"].clock
    time.sleep(0.5)
    client = KubeClient.for_context("a", str(runbook_sim.kubeconfig))
    before = clock.now()
    assert int(before) - 1 <= client.server_time() <= clock.now() + 1
    assert clock.now() - time.time() > 60
