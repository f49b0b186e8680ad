"""Services, Endpoints and EndpointSlices as real kubectl 1.32, the official Python client and lightkube see them:
the endpoints follow the Ready pods the Service selects."""

from __future__ import annotations

import json
import re

import pytest
import yaml

from fixtures import sim_world

runbook_sim = sim_world.runbook_sim
V = "32"
SERVICE = {"apiVersion": "v1", "kind": "Service",
           "metadata": {"name": "llama-8b", "namespace": "llm", "labels": {"app": "llama-8b"}},
           "spec": {"selector": {"app": "llama-8b"}, "ports": [{"name": "http", "port": 80, "targetPort": "http"}]}}


def ok(got) -> str:
    assert got.returncode == 0, got.stderr
    return got.stdout


def _ready_ips(sim: sim_world.Sim) -> list[str]:
    pods = sim.clusters["a"].store.list("pods", "llm")[0]
    return sorted(p["status"]["podIP"] for p in pods if (p["metadata"].get("labels") or {}).get("app") == "llama-8b"
                  and any(c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions", [])))


@pytest.fixture
def served(runbook_sim):
    sim_world.require_kubectl(V)
    got = runbook_sim.kubectl(V, "apply", "-f", "-", stdin=yaml.safe_dump(SERVICE))
    assert ok(got) == "service/llama-8b created\n"
    cluster = runbook_sim.clusters["a"]
    assert cluster.wait_for(lambda: len((cluster.store.find("endpoints", "llm", "llama-8b") or {}).get(
        "subsets", [{}])[0].get("addresses", [])) == 2, 20)
    return runbook_sim


def test_kubectl_get_service_and_endpoints_of_ready_pods(served):
    k = served.kubectl
    svc = ok(k(V, "-n", "llm", "get", "svc", "llama-8b", "-o", "wide")).splitlines()
    assert re.split(r"\s{2,}", svc[0]) == ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE", "SELECTOR"]
    cells = re.split(r"\s{2,}", svc[1])
    assert cells[:2] == ["llama-8b", "ClusterIP"] and cells[3:5] == ["<none>", "80/TCP"] and cells[6] == "app=llama-8b"
    assert re.fullmatch(r"10\.(9[6-9]|10\d|11[01])\.\d+\.\d+", cells[2])
    ips = _ready_ips(served)
    ep = ok(k(V, "-n", "llm", "get", "endpoints", "llama-8b", "-o", "json"))
    (subset,) = json.loads(ep)["subsets"]
    assert sorted(a["ip"] for a in subset["addresses"]) == ips
    assert subset["ports"] == [{"name": "http", "port": 8000, "protocol": "TCP"}]  # named targetPort resolved
    table = ok(k(V, "-n", "llm", "get", "ep", "llama-8b")).splitlines()[1]
    assert sorted(re.split(r"\s{2,}", table)[1].split(",")) == [f"{ip}:8000" for ip in ips]
    listed = ok(k(V, "-n", "llm", "get", "endpointslices", "-l", "kubernetes.io/service-name=llama-8b", "-o",
                  "json"))
    (piece,) = json.loads(listed)["items"]
    assert sorted(e["addresses"][0] for e in piece["endpoints"] if e["conditions"]["ready"]) == ips
    assert "svc/llama-8b" in ok(k(V, "-n", "llm", "get", "all", "-o", "name")).replace("service/", "svc/")


def test_python_client_watches_endpoints_follow_scale_down_and_delete(served):
    from kubernetes import client, config, watch

    api_client = config.new_client_from_config(str(served.kubeconfig), context="a")
    core = client.CoreV1Api(api_client)
    (svc,) = core.list_namespaced_service("llm", label_selector="app=llama-8b").items
    assert (svc.spec.type, svc.spec.ports[0].target_port, svc.spec.ports[0].protocol) == ("ClusterIP", "http", "TCP")
    start = core.read_namespaced_endpoints("llama-8b", "llm")
    assert len(start.subsets[0].addresses) == 2
    slices = client.DiscoveryV1Api(api_client).list_namespaced_endpoint_slice(
        "llm", label_selector="kubernetes.io/service-name=llama-8b").items
    assert [s.address_type for s in slices] == ["IPv4"]

    ok(served.kubectl(V, "-n", "llm", "scale", "deploy/llama-8b", "--replicas=1"))
    seen = []
    for event in watch.Watch().stream(core.list_namespaced_endpoints, "llm", field_selector="metadata.name=llama-8b",
                                      resource_version=start.metadata.resource_version, timeout_seconds=30):
        subsets = event["object"].subsets or []
        seen.append(len(subsets[0].addresses or []) if subsets else 0)
        if seen[-1] == 1:
            break
    assert seen[-1] == 1, seen  # the removed replica left the Service

    gone = core.delete_namespaced_service("llama-8b", "llm")  # Services answer with the deleted object
    assert (gone.kind, gone.metadata.name) == ("Service", "llama-8b")
    cluster = served.clusters["a"]
    assert cluster.wait_for(lambda: cluster.store.find("endpoints", "llm", "llama-8b") is None, 20)
    assert cluster.store.list("endpointslices.discovery.k8s.io", "llm")[0] == []


def test_lightkube_reads_the_same_endpoints(served):
    """A second, independent client (lightkube's own models and HTTP stack) agrees with kubectl."""
    from lightkube import Client, KubeConfig
    from lightkube.resources.core_v1 import Endpoints, Service
    from lightkube.resources.discovery_v1 import EndpointSlice

    kc = Client(KubeConfig.from_file(served.kubeconfig).get(context_name="a"))
    svc = kc.get(Service, "llama-8b", namespace="llm")
    assert svc.spec.clusterIP and svc.spec.ports[0].port == 80
    ep = kc.get(Endpoints, "llama-8b", namespace="llm")
    assert sorted(a.ip for a in ep.subsets[0].addresses) == _ready_ips(served)
    (piece,) = kc.list(EndpointSlice, namespace="llm", labels={"kubernetes.io/service-name": "llama-8b"})
    assert piece.metadata.ownerReferences[0].kind == "Service"


def test_describe_a_service_exposed_with_an_unnamed_port(runbook_sim):
    """`kubectl expose` writes an unnamed port; the EndpointSlice still names it "" as the controller does (kubectl
    1.32's describe dereferenced the missing name and panicked)."""
    sim_world.require_kubectl(V)
    k = runbook_sim.kubectl
    ok(k(V, "-n", "llm", "expose", "deploy", "llama-8b", "--port", "80", "--target-port", "8000", "--name", "llama"))
    cluster = runbook_sim.clusters["a"]
    assert cluster.wait_for(lambda: cluster.store.find("endpointslices.discovery.k8s.io", "llm", "llama")
                            is not None or any(s["metadata"]["name"].startswith("llama-") for s in cluster.store.list(
                                "endpointslices.discovery.k8s.io", "llm")[0]), 20)
    described = ok(k(V, "-n", "llm", "describe", "svc", "llama"))
    assert re.search(r"^Port:\s+<unset>\s+80/TCP$", described, re.M), described
    assert re.search(r"^TargetPort:\s+8000/TCP$", described, re.M), described


def test_service_proxy_reaches_a_ready_endpoint_pod(served):
    """``services/<name>:<port>/proxy/...`` (port: the Service's port number or name) goes to a Ready pod of its
    endpoints on the resolved target port, as the pod proxy does; an unknown port or no Ready pod is a 503."""
    k = served.kubectl
    for ref in ("llama-8b:80", "llama-8b:http", "http:llama-8b:80"):
        got = k(V, "get", "--raw", f"/api/v1/namespaces/llm/services/{ref}/proxy/v1/models", timeout=30)
        models = json.loads(ok(got))
        assert [m["id"] for m in models["data"]] == ["meta-llama/Llama-3.1-8B-Instruct"], (ref, models)
    wrong = k(V, "get", "--raw", "/api/v1/namespaces/llm/services/llama-8b:8000/proxy/v1/models", timeout=30)
    assert wrong.returncode != 0 and 'no service port 8000 found for service "llama-8b"' in wrong.stderr, wrong.stderr
    idle = dict(SERVICE, metadata={"name": "idle", "namespace": "llm"}, spec={"selector": {"app": "none"}, "ports": [
        {"port": 8000, "targetPort": 8000}]})
    ok(k(V, "apply", "-f", "-", stdin=yaml.safe_dump(idle)))
    none = k(V, "get", "--raw", "/api/v1/namespaces/llm/services/idle:8000/proxy/v1/models", timeout=30)
    assert none.returncode != 0 and 'no endpoints available for service "idle"' in none.stderr, none.stderr
