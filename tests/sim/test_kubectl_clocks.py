"""Nodes as the official client expects them, and times a person can read with real kubectl 1.32."""

from __future__ import annotations

import http.client
import re
import time
from email.utils import parsedate_to_datetime
from urllib.parse import urlsplit

import pytest

from fixtures import sim_world
from vllm_remedy.sim.clock import parse_timestamp

runbook_sim = sim_world.runbook_sim
V = "32"
STAMPED = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z (.*)$")


@pytest.fixture(autouse=True)
def _need_kubectl() -> None:
    sim_world.require_kubectl(V)


def _api(sim: sim_world.Sim):
    from kubernetes import config

    return config.new_client_from_config(str(sim.kubeconfig), context="a")


def test_official_client_lists_nodes_and_their_leases_with_heartbeats_on_the_cluster_clock(runbook_sim):
    from kubernetes import client

    clock = runbook_sim.clusters["a"].clock
    api = _api(runbook_sim)
    before = clock.now()
    nodes = client.CoreV1Api(api).list_node().items  # deserialises: every nodeInfo field is there
    leases = client.CoordinationV1Api(api).list_namespaced_lease("kube-node-lease").items
    after = clock.now()
    assert len(nodes) == 6
    for node in nodes:
        info = node.status.node_info
        assert all([info.boot_id, info.machine_id, info.system_uuid, info.kernel_version, info.os_image,
                    info.container_runtime_version, info.kubelet_version, info.kube_proxy_version])
        ready = next(c for c in node.status.conditions if c.type == "Ready")
        assert before - 300 - 1 <= ready.last_heartbeat_time.timestamp() <= after  # kubelet posts every 5 min
    assert sorted(lease.metadata.name for lease in leases) == sorted(n.metadata.name for n in nodes)
    for lease in leases:
        assert lease.spec.holder_identity == lease.metadata.name and lease.spec.lease_duration_seconds == 40
        assert before - 10 - 1 <= lease.spec.renew_time.timestamp() <= after  # renewed every 10 s
    table = runbook_sim.kubectl(V, "get", "leases", "-n", "kube-node-lease", timeout=30).stdout
    assert table.splitlines()[0].split() == ["NAME", "HOLDER", "AGE"]


def test_describe_and_events_show_ages_not_invalid(runbook_sim):
    k = runbook_sim.kubectl
    store = runbook_sim.clusters["a"].store
    pod = store.list("pods", "llm")[0][0]["metadata"]["name"]
    assert k(V, "-n", "llm", "delete", "pod", pod, "--wait=false").returncode == 0
    runbook_sim.clusters["a"].wait_for(lambda: len([p for p in store.list("pods", "llm")[0]
                                                    if not p["metadata"].get("deletionTimestamp")]) == 2, 20)
    for args in (["describe", "rs"], ["events"], ["get", "events"], ["describe", "deploy", "llama-8b"]):
        got = k(V, "-n", "llm", *args, timeout=30)
        assert got.returncode == 0, got.stderr
        assert "<invalid>" not in got.stdout and "<unknown>" not in got.stdout, (args, got.stdout)
    ages = re.findall(r"SuccessfulCreate\s+(\S+)\s+replicaset-controller", k(V, "-n", "llm", "describe", "rs").stdout)
    assert ages and all(re.fullmatch(r"\d+(s|m\d*s?|h\d*m?)", a) for a in ages), ages


def test_logs_timestamps_since_and_since_time_on_the_readers_clock(runbook_sim):
    # kubectl's stamps are on its wall clock (reader_clock); at 1x the shift between the clocks stands still, so a
    # stamp copied from --timestamps and sent back as --since-time names the same line
    runbook_sim.clusters["a"].clock.set_speed(1)
    k = runbook_sim.kubectl
    plain = k(V, "-n", "llm", "logs", "deploy/llama-8b", timeout=30).stdout.splitlines()
    stamped = k(V, "-n", "llm", "logs", "deploy/llama-8b", "--timestamps", timeout=30).stdout.splitlines()
    assert len(stamped) == len(plain) > 5
    matches = [STAMPED.match(line) for line in stamped]
    assert all(matches) and [m.group(1) for m in matches if m] == plain
    times = [parse_timestamp(line.split(" ", 1)[0]) for line in stamped]
    assert times == sorted(times) and times[-1] <= time.time() + 1
    cut = stamped[len(stamped) // 2].split(" ", 1)[0]
    since_time = k(V, "-n", "llm", "logs", "deploy/llama-8b", f"--since-time={cut}", timeout=30).stdout.splitlines()
    whole = int(parse_timestamp(cut))  # kubectl sends sinceTime to the second
    assert since_time == [p for p, t in zip(plain, times, strict=True) if t >= whole]
    assert len(since_time) < len(plain)
    assert k(V, "-n", "llm", "logs", "deploy/llama-8b", "--since-time=2999-01-01T00:00:00Z",
             timeout=30).stdout == ""
    assert k(V, "-n", "llm", "logs", "deploy/llama-8b", "--since=8760h", timeout=30).stdout.splitlines() == plain


def test_date_header_is_the_cluster_clock_with_or_without_the_cluster_prefix(runbook_sim):
    clock = runbook_sim.clusters["a"].clock
    for base in (runbook_sim.url(), runbook_sim.server.url):
        url = urlsplit(base)
        before = clock.now()
        conn = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
        conn.request("GET", url.path + "/version")
        date = parsedate_to_datetime(conn.getresponse().getheader("Date")).timestamp()
        conn.close()
        assert int(before) <= date <= clock.now(), base


def test_events_k8s_io_v1_serves_the_same_events_in_its_own_field_names(runbook_sim):
    from kubernetes import client

    api = _api(runbook_sim)
    core = client.CoreV1Api(api).list_namespaced_event("llm").items
    newer = client.EventsV1Api(api).list_namespaced_event("llm").items
    assert sorted(e.metadata.name for e in newer) == sorted(e.metadata.name for e in core) and core
    by_name = {e.metadata.name: e for e in core}
    for event in newer:
        old = by_name[event.metadata.name]
        assert (event.note, event.regarding.name, event.reason, event.deprecated_count) == (
            old.message, old.involved_object.name, old.reason, old.count)
        assert event.event_time is not None and event.reporting_controller
    table = runbook_sim.kubectl(V, "-n", "llm", "get", "events.v1.events.k8s.io", timeout=30)
    assert table.returncode == 0 and table.stdout.split()[:5] == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT"]
    code, _, body = sim_world.call(runbook_sim.url(), "POST", "/apis/events.k8s.io/v1/namespaces/llm/events",
                                   {"metadata": {"name": "x"}})
    assert (code, body["reason"]) == (405, "MethodNotAllowed")  # the cluster's recorders write core/v1 Events
