"""The endpoint controllers' pure part: which pods a Service's Endpoints and EndpointSlice list, and how."""

from __future__ import annotations

from vllm_remedy.sim.endpoints import desired_endpoints, desired_slice

SERVICE = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "llama", "namespace": "llm", "uid": "u-1"},
           "spec": {"selector": {"app": "llama"}, "ports": [{"name": "http", "port": 80, "targetPort": "http"}]}}


def pod(name: str, ip: str | None, ready: bool, *, app: str = "llama", deleting: bool = False) -> dict:
    meta = {"name": name, "namespace": "llm", "uid": f"uid-{name}", "labels": {"app": app}}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    status = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    if ip:
        status["podIP"] = ip
    return {"metadata": meta, "spec": {"nodeName": "gpu-1", "containers": [
        {"name": "vllm", "ports": [{"name": "http", "containerPort": 8000}]}]}, "status": status}


def test_ready_pods_are_addresses_unready_are_not_ready_others_left_out():
    pods = [pod("a", "10.1.0.1", True), pod("b", "10.1.0.2", False), pod("c", None, False),
            pod("d", "10.1.0.4", True, deleting=True), pod("e", "10.1.0.5", True, app="other")]
    (subset,) = desired_endpoints(SERVICE, pods)["subsets"]
    assert [a["ip"] for a in subset["addresses"]] == ["10.1.0.1"]
    assert [a["ip"] for a in subset["notReadyAddresses"]] == ["10.1.0.2"]
    assert subset["addresses"][0]["targetRef"] == {"kind": "Pod", "namespace": "llm", "name": "a", "uid": "uid-a"}
    assert subset["ports"] == [{"port": 8000, "protocol": "TCP", "name": "http"}]  # named targetPort resolved
    piece = desired_slice(SERVICE, pods)
    assert [(e["addresses"], e["conditions"]["ready"]) for e in piece["endpoints"]] == [
        (["10.1.0.1"], True), (["10.1.0.2"], False)]
    assert piece["metadata"]["labels"]["kubernetes.io/service-name"] == "llama"
    assert piece["metadata"]["ownerReferences"][0]["uid"] == "u-1"


def test_no_pods_means_no_subsets_but_an_empty_slice():
    assert "subsets" not in desired_endpoints(SERVICE, [])
    assert desired_slice(SERVICE, [])["endpoints"] == []
