"""The official ``kubernetes`` Python client against the rehearsal cluster, as the product uses it."""

from __future__ import annotations

import json
import threading
import time

import pytest
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

from fixtures import sim_world
from fixtures.sim_world import deployment
from vllm_remedy.sim.api.auth import load as load_auth

runbook_sim = sim_world.runbook_sim
sim = sim_world.sim

READ_ONLY = {"tokens": {
    "admin-token": {"user": "admin", "rules": [{"verbs": "*", "resources": "*"}]},
    "drift-token": {"user": "drift", "rules": [{"verbs": ["get", "list", "watch"],
                                                "resources": ["deployments.apps", "replicasets.apps", "pods",
                                                              "pods/log"], "namespaces": ["llm"]}]}}}


def apps(s, context: str = "a") -> client.AppsV1Api:
    return client.AppsV1Api(config.new_client_from_config(str(s.kubeconfig), context=context))


def core(s, context: str = "a") -> client.CoreV1Api:
    return client.CoreV1Api(config.new_client_from_config(str(s.kubeconfig), context=context))


def test_list_and_read(runbook_sim):
    listed = apps(runbook_sim).list_namespaced_deployment("llm")
    assert [d.metadata.name for d in listed.items] == ["llama-8b"]
    assert listed.metadata.resource_version.isdigit()
    rs = apps(runbook_sim).list_namespaced_replica_set("llm", label_selector="app=llama-8b")
    got = sorted(int(r.metadata.annotations["deployment.kubernetes.io/revision"]) for r in rs.items)
    assert len(got) == 3 and got == sim_world.revisions(runbook_sim.clusters["a"])
    raw = core(runbook_sim).list_node(label_selector="nvidia.com/gpu.product=NVIDIA-L40S", _preload_content=False)
    nodes = json.loads(raw.data)
    assert sorted(n["metadata"]["name"] for n in nodes["items"]) == ["gpu-l40s-1", "gpu-l40s-2", "gpu-l40s-3"]


def test_stale_resource_version_raises_409(runbook_sim):
    api = apps(runbook_sim)
    old = api.read_namespaced_deployment("llama-8b", "llm")
    api.patch_namespaced_deployment("llama-8b", "llm", {"metadata": {"annotations": {"x": "1"}}})
    old.spec.replicas = 5
    with pytest.raises(ApiException) as err:
        api.replace_namespaced_deployment("llama-8b", "llm", old)
    assert err.value.status == 409
    assert api.read_namespaced_deployment("llama-8b", "llm").spec.replicas == 2


def test_failed_json_patch_test_raises_422(runbook_sim):
    api = apps(runbook_sim)
    with pytest.raises(ApiException) as err:
        api.patch_namespaced_deployment("llama-8b", "llm", [
            {"op": "test", "path": "/metadata/resourceVersion", "value": "1"},
            {"op": "replace", "path": "/spec/replicas", "value": 0}])
    assert err.value.status == 422
    assert api.read_namespaced_deployment("llama-8b", "llm").spec.replicas == 2


def test_dict_patch_is_strategic_and_dry_run_stores_nothing(runbook_sim):
    api = apps(runbook_sim)
    body = {"spec": {"template": {"spec": {"containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.9.1"}]}}}}
    preview = api.patch_namespaced_deployment("llama-8b", "llm", body, dry_run="All")
    container = preview.spec.template.spec.containers[0]
    assert (container.image, "--max-model-len" in container.args) == ("vllm/vllm-openai:v0.9.1", True)
    live = api.read_namespaced_deployment("llama-8b", "llm")
    assert live.spec.template.spec.containers[0].image != "vllm/vllm-openai:v0.9.1"


def test_watch_replays_from_resource_version_and_times_out(runbook_sim):
    api = apps(runbook_sim)
    rv = api.list_namespaced_deployment("llm").metadata.resource_version
    api.patch_namespaced_deployment("llama-8b", "llm", {"metadata": {"labels": {"tier": "gold"}}})
    started = time.monotonic()
    events = [(e["type"], e["object"].metadata.labels.get("tier"))
              for e in watch.Watch().stream(api.list_namespaced_deployment, "llm", resource_version=rv,
                                            timeout_seconds=2)]
    assert events[0] == ("MODIFIED", "gold")
    assert 1.5 <= time.monotonic() - started < 10


def test_watch_without_resource_version_starts_with_added(sim):
    api = apps(sim)
    api.create_namespaced_deployment("llm", deployment())
    seen = [(e["type"], e["object"].metadata.name)
            for e in watch.Watch().stream(api.list_namespaced_deployment, "llm", timeout_seconds=1)]
    assert seen == [("ADDED", "llama-8b")]


def test_watch_sees_changes_made_while_it_runs(sim):
    api = apps(sim)
    api.create_namespaced_deployment("llm", deployment())
    rv = api.list_namespaced_deployment("llm").metadata.resource_version
    timer = threading.Timer(0.3, lambda: api.patch_namespaced_deployment_scale(
        "llama-8b", "llm", {"spec": {"replicas": 3}}))
    timer.start()
    replicas = [e["object"].spec.replicas for e in watch.Watch().stream(
        api.list_namespaced_deployment, "llm", resource_version=rv, timeout_seconds=2)]
    timer.join()
    assert replicas == [3]


def test_previous_log_without_a_terminated_container_is_400(runbook_sim):
    api = core(runbook_sim)
    pod = api.list_namespaced_pod("llm", label_selector="app=llama-8b").items[0].metadata.name
    text = api.read_namespaced_pod_log(pod, "llm", container="vllm")
    assert text and text == runbook_sim.clusters["a"].read_log("llm", pod, "vllm", False)[:len(text)]
    with pytest.raises(ApiException) as err:
        api.read_namespaced_pod_log(pod, "llm", container="vllm", previous=True)
    assert err.value.status == 400
    assert json.loads(err.value.body)["message"] == f'previous terminated container "vllm" in pod "{pod}" not found'


def test_read_only_token_can_read_and_gets_403_on_patch(tmp_path):
    users = {"admin": "admin-token", "drift": "drift-token"}
    s = sim_world.make_sim(tmp_path, auth=load_auth(READ_ONLY), users=users)
    try:
        apps(s).create_namespaced_deployment("llm", deployment())  # context "a" = admin
        reader = apps(s, context="a-drift")
        assert [d.metadata.name for d in reader.list_namespaced_deployment("llm").items] == ["llama-8b"]
        with pytest.raises(ApiException) as err:
            reader.patch_namespaced_deployment("llama-8b", "llm", {"spec": {"replicas": 0}})
        assert err.value.status == 403
        assert json.loads(err.value.body)["message"] == (
            'deployments.apps "llama-8b" is forbidden: User "drift" cannot patch resource "deployments" '
            'in API group "apps" in the namespace "llm"')
        with pytest.raises(ApiException) as err:
            reader.list_deployment_for_all_namespaces()
        assert err.value.status == 403
        anon_config = client.Configuration(host=s.url())
        anon_config.ssl_ca_cert = str(tmp_path / "tls" / "serving.crt")  # auth implies HTTPS
        anonymous = client.AppsV1Api(client.ApiClient(anon_config))
        with pytest.raises(ApiException) as err:
            anonymous.list_namespaced_deployment("llm")
        assert err.value.status == 401
    finally:
        s.server.stop()
