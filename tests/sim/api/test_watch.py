"""Watches, fault injection and persistence of the rehearsal cluster's API."""

from __future__ import annotations

import json
import time

from fixtures import sim_world
from fixtures.sim_world import TABLE, call, deployment
from vllm_remedy.sim.cluster import Cluster
from vllm_remedy.sim.server import load_state

sim = sim_world.sim
DEPLOYS = "/apis/apps/v1/namespaces/llm/deployments"


def lines(body: str | dict) -> list[dict]:
    """Watch events; ``call`` already decoded a single-event stream as one JSON document."""
    if isinstance(body, dict):
        return [body]
    return [json.loads(line) for line in body.splitlines() if line.strip()]


def test_watch_honours_timeout_seconds(sim):
    started = time.monotonic()
    status, _, body = call(sim.url(), "GET", DEPLOYS + "?watch=true&timeoutSeconds=1&resourceVersion=1")
    assert (status, body) == (200, "")
    assert 0.9 <= time.monotonic() - started < 4


def test_watch_replays_only_newer_events_with_selector(sim):
    _, _, made = call(sim.url(), "POST", DEPLOYS, deployment("one"))
    call(sim.url(), "POST", DEPLOYS, deployment("two"))
    call(sim.url(), "PATCH", DEPLOYS + "/one", {"spec": {"replicas": 4}}, content_type="application/merge-patch+json")
    rv = made["metadata"]["resourceVersion"]
    _, _, body = call(sim.url(), "GET", DEPLOYS + f"?watch=1&timeoutSeconds=1&resourceVersion={rv}"
                      "&fieldSelector=metadata.name%3Done")
    assert [(e["type"], e["object"]["spec"]["replicas"]) for e in lines(body)] == [("MODIFIED", 4)]


def test_watch_from_a_compacted_resource_version_is_410_in_stream(sim):
    store = sim.clusters["a"].store
    call(sim.url(), "POST", DEPLOYS, deployment())
    store.restore(store.snapshot())  # a restart drops the event window, like etcd compaction
    call(sim.url(), "POST", DEPLOYS, deployment("later"))
    _, _, body = call(sim.url(), "GET", DEPLOYS + "?watch=1&timeoutSeconds=1&resourceVersion=1")
    (event,) = lines(body)
    assert (event["type"], event["object"]["code"], event["object"]["reason"]) == ("ERROR", 410, "Expired")


def test_label_selector_watch_sees_objects_enter_and_leave(sim):
    _, _, made = call(sim.url(), "POST", DEPLOYS, deployment("one"))
    rv = made["metadata"]["resourceVersion"]
    merge = "application/merge-patch+json"
    call(sim.url(), "PATCH", DEPLOYS + "/one", {"metadata": {"labels": {"tier": "gold"}}}, content_type=merge)
    call(sim.url(), "PATCH", DEPLOYS + "/one", {"spec": {"replicas": 3}}, content_type=merge)
    call(sim.url(), "PATCH", DEPLOYS + "/one", {"metadata": {"labels": {"tier": None}}}, content_type=merge)
    _, _, body = call(sim.url(), "GET", DEPLOYS + f"?watch=1&timeoutSeconds=1&resourceVersion={rv}"
                      "&labelSelector=tier%3Dgold")
    assert [e["type"] for e in lines(body)] == ["ADDED", "MODIFIED", "DELETED"]


def test_table_watch_for_kubectl_get_w(sim):
    call(sim.url(), "POST", DEPLOYS, deployment())
    _, _, body = call(sim.url(), "GET", DEPLOYS + "?watch=1&timeoutSeconds=1", accept=TABLE)
    (event,) = lines(body)
    assert event["object"]["kind"] == "Table"
    assert event["object"]["rows"][0]["cells"][:2] == ["llama-8b", "0/2"]


def test_fault_injection_error_rate_conflicts_latency_and_dropped_watch(sim):
    admin = sim.server.url + "/admin/clusters/a/faults"
    call(sim.url(), "POST", DEPLOYS, deployment())
    status, _, rules = call(admin, "PUT", "", [{"verb": "patch", "error_rate": 1.0, "error_code": 503}])
    assert (status, rules["rules"][0]["error_code"]) == (200, 503)
    status, _, body = call(sim.url(), "PATCH", DEPLOYS + "/llama-8b", {}, content_type="application/merge-patch+json")
    assert (status, body["reason"]) == (503, "ServiceUnavailable")
    assert call(sim.url(), "GET", DEPLOYS + "/llama-8b")[0] == 200
    call(admin, "PUT", "", {"rules": [{"verb": "*", "resource": "deployments", "conflicts": 1},
                                      {"verb": "list", "latency_ms": 300},
                                      {"verb": "watch", "drop_watch_after": 1}]})
    patch = ("PATCH", DEPLOYS + "/llama-8b", {"spec": {"replicas": 3}})
    assert call(sim.url(), *patch, content_type="application/merge-patch+json")[0] == 409
    assert call(sim.url(), *patch, content_type="application/merge-patch+json")[0] == 200
    started = time.monotonic()
    call(sim.url(), "GET", DEPLOYS)
    assert time.monotonic() - started >= 0.3
    started = time.monotonic()
    call(sim.url(), "GET", DEPLOYS + "?watch=1&timeoutSeconds=30&resourceVersion=1")
    assert time.monotonic() - started < 5
    assert call(admin, "DELETE", "")[2] == {"rules": []}
    status, _, body = call(admin, "PUT", "", [{"verb": "patch", "error_rate": 3}])
    assert (status, body["reason"]) == (400, "BadRequest")


def test_state_is_saved_and_restores(tmp_path):
    s = sim_world.make_sim(tmp_path, state_dir=tmp_path / "state")
    try:
        _, _, made = call(s.url(), "POST", DEPLOYS, deployment())
    finally:
        s.server.stop()
    saved = load_state(tmp_path / "state" / "a.json")
    back = Cluster("a")
    back.restore(saved["snapshot"])
    again = back.store.get("deployments.apps", "llm", "llama-8b")
    assert (again["metadata"]["uid"], again["metadata"]["resourceVersion"]) == (
        made["metadata"]["uid"], made["metadata"]["resourceVersion"])
    assert back.store.resource_version == s.clusters["a"].store.resource_version


def test_several_clusters_are_separate(tmp_path):
    s = sim_world.make_sim(tmp_path, names=("a", "b"))
    try:
        call(s.url("a"), "POST", DEPLOYS, deployment("only-in-a"))
        _, _, in_b = call(s.url("b"), "GET", DEPLOYS)
        _, _, in_a = call(s.url("a"), "GET", DEPLOYS)
        assert ([d["metadata"]["name"] for d in in_a["items"]], in_b["items"]) == (["only-in-a"], [])
        _, _, clusters = call(s.server.url, "GET", "/admin/clusters")
        assert clusters == {"clusters": ["a", "b"]}
    finally:
        s.server.stop()
