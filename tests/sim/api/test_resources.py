"""The less-travelled resources and subresources: pods/log parameters, pods/proxy, HTTPRoutes,
configmaps, events, namespaces — each as kube-apiserver serves it."""

from __future__ import annotations

import time

from fixtures import sim_world
from fixtures.sim_world import TABLE, call, deployment

live_sim = sim_world.live_sim
sim = sim_world.sim
PODS = "/api/v1/namespaces/llm/pods"


def _running_pod(s) -> str:
    s.clusters["a"].store.create("deployments.apps", deployment(replicas=1))
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        pods = s.clusters["a"].store.list("pods", "llm")[0]
        ready = [p for p in pods if any(cs.get("ready") for cs in p["status"].get("containerStatuses") or [])]
        if ready:
            return ready[0]["metadata"]["name"]
        time.sleep(0.1)
    raise AssertionError("no pod became ready")


def test_log_parameters_and_proxy(live_sim):
    pod = _running_pod(live_sim)
    status, kind, text = call(live_sim.url(), "GET", f"{PODS}/{pod}/log?container=vllm")
    assert (status, kind) == (200, "text/plain")
    assert text and text == live_sim.clusters["a"].read_log("llm", pod, "vllm", False)[:len(text)]
    _, _, tail = call(live_sim.url(), "GET", f"{PODS}/{pod}/log?tailLines=1")
    assert tail.splitlines() == text.splitlines()[-1:]
    status, _, body = call(live_sim.url(), "GET", f"{PODS}/{pod}/log?container=nope")
    assert (status, body["message"]) == (400, f"container nope is not valid for pod {pod}")
    status, _, body = call(live_sim.url(), "GET", f"{PODS}/ghost/log")
    assert (status, body["message"]) == (404, 'pods "ghost" not found')
    status, _, _ = call(live_sim.url(), "GET", f"{PODS}/{pod}:8000/proxy/health")
    assert status == 200


def test_httproute_weights_merge_patch_and_no_strategic_merge(sim):
    routes = "/apis/gateway.networking.k8s.io/v1/namespaces/llm/httproutes"
    route = {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
             "metadata": {"name": "llm", "namespace": "llm"},
             "spec": {"hostnames": ["llm.example.com"], "rules": [{"backendRefs": [
                 {"name": "llama-8b", "port": 8000, "weight": 100}, {"name": "fallback", "port": 80, "weight": 0}]}]}}
    assert call(sim.url(), "POST", routes, route)[0] == 201
    rules = [{"backendRefs": [{"name": "llama-8b", "port": 8000, "weight": 50},
                              {"name": "fallback", "port": 80, "weight": 50}]}]
    _, _, patched = call(sim.url(), "PATCH", routes + "/llm", {"spec": {"rules": rules}},
                         content_type="application/merge-patch+json")
    assert [b["weight"] for b in patched["spec"]["rules"][0]["backendRefs"]] == [50, 50]
    status, _, body = call(sim.url(), "PATCH", routes + "/llm", {"spec": {}},
                           content_type="application/strategic-merge-patch+json")
    assert (status, body["reason"]) == (415, "UnsupportedMediaType")
    _, _, table = call(sim.url(), "GET", routes, accept=TABLE)
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Hostnames", "Age"]
    assert table["rows"][0]["cells"][:2] == ["llm", "['llm.example.com']"]


def test_configmap_event_and_namespace_tables(sim):
    call(sim.url(), "POST", "/api/v1/namespaces/llm/configmaps", {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "policy"}, "data": {"a": "1", "b": "2"}})
    _, _, table = call(sim.url(), "GET", "/api/v1/namespaces/llm/configmaps", accept=TABLE)
    assert table["rows"][0]["cells"][:2] == ["policy", 2]
    now = sim.clusters["a"].clock.timestamp()
    call(sim.url(), "POST", "/api/v1/namespaces/llm/events", {
        "apiVersion": "v1", "kind": "Event", "metadata": {"name": "p.1"}, "type": "Warning", "reason": "BackOff",
        "message": "Back-off restarting failed container vllm in pod p", "count": 5,
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": "llm", "fieldPath": "spec.containers{vllm}"},
        "source": {"component": "kubelet", "host": "gpu-1"}, "firstTimestamp": now, "lastTimestamp": now})
    _, _, table = call(sim.url(), "GET", "/api/v1/namespaces/llm/events?fieldSelector=reason%3DBackOff", accept=TABLE)
    assert table["rows"][0]["cells"][1:] == ["Warning", "BackOff", "pod/p", "spec.containers{vllm}",
                                             "kubelet, gpu-1", "Back-off restarting failed container vllm in pod p",
                                             table["rows"][0]["cells"][0], 5, "p.1"]
    _, _, table = call(sim.url(), "GET", "/api/v1/namespaces", accept=TABLE)
    assert [r["cells"][:2] for r in table["rows"]] == [["default", "Active"], ["kube-node-lease", "Active"],
                                                       ["kube-public", "Active"], ["kube-system", "Active"],
                                                       ["llm", "Active"]]


def test_deleting_a_namespace_deletes_its_objects(sim):
    call(sim.url(), "POST", "/apis/apps/v1/namespaces/llm/deployments", deployment())
    assert call(sim.url(), "DELETE", "/api/v1/namespaces/llm")[0] == 200
    _, _, left = call(sim.url(), "GET", "/apis/apps/v1/deployments")
    assert left["items"] == []
