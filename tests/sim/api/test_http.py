"""The rehearsal cluster's HTTP API answers as kube-apiserver does, request by request."""

from __future__ import annotations

import json

from fixtures import sim_world
from fixtures.sim_world import TABLE, call, deployment, gpu_node
from vllm_remedy.sim.api.tables import human_duration
from vllm_remedy.sim.clock import parse_timestamp

sim = sim_world.sim
DEPLOYS = "/apis/apps/v1/namespaces/llm/deployments"


def test_version_reports_minor_32_for_the_kubectl_dispatcher(sim):
    status, _, body = call(sim.url(), "GET", "/version")
    assert (status, body["major"], body["minor"]) == (200, "1", "32")


def test_discovery_lists_short_names_categories_and_subresources(sim):
    _, _, core = call(sim.url(), "GET", "/api/v1")
    pods = next(r for r in core["resources"] if r["name"] == "pods")
    assert (pods["kind"], pods["shortNames"], pods["categories"], pods["namespaced"]) == ("Pod", ["po"], ["all"], True)
    names = {r["name"] for r in core["resources"]}
    assert {"pods/log", "pods/proxy", "nodes", "events", "configmaps", "namespaces"} <= names
    _, _, apps = call(sim.url(), "GET", "/apis/apps/v1")
    by_name = {r["name"]: r for r in apps["resources"]}
    assert by_name["deployments"]["shortNames"] == ["deploy"]
    assert by_name["replicasets"]["shortNames"] == ["rs"]
    assert by_name["deployments/scale"]["group"] == "autoscaling"
    assert "deployments/status" in by_name
    _, _, groups = call(sim.url(), "GET", "/apis")
    # leaderworkerset.x-k8s.io is served only once its CustomResourceDefinition is installed
    assert [g["name"] for g in groups["groups"]] == ["apiextensions.k8s.io", "apps", "authentication.k8s.io",
                                                     "authorization.k8s.io", "batch", "coordination.k8s.io",
                                                     "discovery.k8s.io", "events.k8s.io",
                                                     "gateway.networking.k8s.io", "rbac.authorization.k8s.io"]
    _, _, gw = call(sim.url(), "GET", "/apis/gateway.networking.k8s.io/v1")
    assert [r["name"] for r in gw["resources"]] == ["httproutes", "httproutes/status"]


def test_list_has_kind_api_version_and_numeric_resource_version(sim):
    call(sim.url(), "POST", DEPLOYS, deployment())
    status, _, body = call(sim.url(), "GET", DEPLOYS)
    assert (status, body["kind"], body["apiVersion"]) == (200, "DeploymentList", "apps/v1")
    assert body["metadata"]["resourceVersion"].isdigit()
    assert [d["metadata"]["name"] for d in body["items"]] == ["llama-8b"]


def test_deployment_table_has_kubectls_columns(sim):
    call(sim.url(), "POST", DEPLOYS, deployment())
    status, kind, table = call(sim.url(), "GET", DEPLOYS, accept=TABLE)
    assert (status, kind) == (200, "application/json;as=Table;v=v1;g=meta.k8s.io")
    cols = [(c["name"], c["priority"]) for c in table["columnDefinitions"]]
    assert cols == [("Name", 0), ("Ready", 0), ("Up-to-date", 0), ("Available", 0), ("Age", 0),
                    ("Containers", 1), ("Images", 1), ("Selector", 1)]
    cells = table["rows"][0]["cells"]
    assert cells[:4] == ["llama-8b", "0/2", 0, 0]
    assert cells[5:] == ["vllm", "vllm/vllm-openai:v0.8.5", "app=llama-8b"]
    assert table["rows"][0]["object"]["kind"] == "PartialObjectMetadata"


def test_pod_table_shows_crash_loop_restarts_and_node(sim):
    store, clock = sim.clusters["a"].store, sim.clusters["a"].clock
    finished = clock.timestamp(clock.now() - 47)
    store.create("pods", {"apiVersion": "v1", "kind": "Pod",
                          "metadata": {"name": "p1", "namespace": "llm", "creationTimestamp": clock.timestamp(
                              clock.now() - 600)},
                          "spec": {"nodeName": "gpu-1", "containers": [{"name": "vllm", "image": "x"}]},
                          "status": {"phase": "Running", "podIP": "10.244.0.7", "containerStatuses": [{
                              "name": "vllm", "ready": False, "restartCount": 5,
                              "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                              "lastState": {"terminated": {"exitCode": 1, "reason": "Error",
                                                           "finishedAt": finished}}}]}})
    _, _, table = call(sim.url(), "GET", "/api/v1/namespaces/llm/pods", accept=TABLE)
    assert [c["name"] for c in table["columnDefinitions"]] == [
        "Name", "Ready", "Status", "Restarts", "Age", "IP", "Node", "Nominated Node", "Readiness Gates"]
    # the cluster clock runs on while the request is served, so the last restart is 47 s or a few seconds more ago
    waited = clock.now() - parse_timestamp(finished)
    cells = table["rows"][0]["cells"]
    assert cells[3] in {f"5 ({s}s ago)" for s in range(47, int(waited) + 1)}, (cells[3], waited)
    assert cells[:3] + cells[4:] == ["p1", "0/1", "CrashLoopBackOff", "10m", "10.244.0.7", "gpu-1", "<none>",
                                     "<none>"]


def test_node_table(sim):
    sim.clusters["a"].store.create("nodes", gpu_node("gpu-1"))
    _, _, table = call(sim.url(), "GET", "/api/v1/nodes", accept=TABLE)
    cells = table["rows"][0]["cells"]
    assert cells[:3] == ["gpu-1", "Ready", "<none>"]
    assert cells[4:] == ["v1.32.0", "10.0.0.5", "<none>", "Ubuntu 22.04.4 LTS", "5.15.0-1057", "containerd://1.7.13"]


def test_human_duration_matches_kubectl():
    assert [human_duration(s) for s in (5, 119, 120, 185, 600, 3 * 3600 + 60, 9 * 3600, 3 * 86400 + 3600,
                                        30 * 86400)] == ["5s", "119s", "2m", "3m5s", "10m", "3h1m", "9h", "3d1h", "30d"]


def test_label_and_field_selectors(sim):
    for name in ("a1", "b1"):
        call(sim.url(), "POST", DEPLOYS, deployment(name))
    _, _, body = call(sim.url(), "GET", DEPLOYS + "?labelSelector=app%20in%20(b1,zz)")
    assert [d["metadata"]["name"] for d in body["items"]] == ["b1"]
    _, _, body = call(sim.url(), "GET", DEPLOYS + "?labelSelector=app!=b1")
    assert [d["metadata"]["name"] for d in body["items"]] == ["a1"]
    _, _, body = call(sim.url(), "GET", DEPLOYS + "?fieldSelector=metadata.name%3Db1")
    assert [d["metadata"]["name"] for d in body["items"]] == ["b1"]


def test_bad_selectors_are_400_status(sim):
    status, _, body = call(sim.url(), "GET", DEPLOYS + "?labelSelector=app%20in%20(a")
    assert (status, body["kind"], body["reason"]) == (400, "Status", "BadRequest")
    status, _, body = call(sim.url(), "GET", DEPLOYS + "?fieldSelector=spec.replicas%3D2")
    assert (status, body["message"]) == (400, "field label not supported: spec.replicas")


def test_stale_resource_version_is_409_and_nothing_changes(sim):
    _, _, made = call(sim.url(), "POST", DEPLOYS, deployment())
    call(sim.url(), "PATCH", DEPLOYS + "/llama-8b", {"spec": {"replicas": 3}},
         content_type="application/merge-patch+json")
    made["spec"]["replicas"] = 7
    status, _, body = call(sim.url(), "PUT", DEPLOYS + "/llama-8b", made)
    assert (status, body["reason"]) == (409, "Conflict")
    assert "the object has been modified" in body["message"]
    _, _, now = call(sim.url(), "GET", DEPLOYS + "/llama-8b")
    assert now["spec"]["replicas"] == 3


def test_failed_json_patch_test_is_422(sim):
    call(sim.url(), "POST", DEPLOYS, deployment())
    ops = [{"op": "test", "path": "/spec/replicas", "value": 9}, {"op": "replace", "path": "/spec/replicas",
                                                                 "value": 1}]
    status, _, body = call(sim.url(), "PATCH", DEPLOYS + "/llama-8b", ops, content_type="application/json-patch+json")
    assert (status, body["reason"]) == (422, "Invalid")
    assert "testing value /spec/replicas failed" in body["message"]


def test_dry_run_returns_result_but_stores_nothing(sim):
    _, _, made = call(sim.url(), "POST", DEPLOYS, deployment())
    status, _, preview = call(sim.url(), "PATCH", DEPLOYS + "/llama-8b?dryRun=All", {"spec": {"replicas": 5}},
                              content_type="application/strategic-merge-patch+json")
    assert (status, preview["spec"]["replicas"], preview["metadata"]["generation"]) == (200, 5, 2)
    _, _, now = call(sim.url(), "GET", DEPLOYS + "/llama-8b")
    assert (now["spec"]["replicas"], now["metadata"]["resourceVersion"]) == (2, made["metadata"]["resourceVersion"])
    status, _, _ = call(sim.url(), "POST", DEPLOYS + "?dryRun=All", deployment("other"))
    assert status == 201
    assert call(sim.url(), "GET", DEPLOYS + "/other")[0] == 404


def test_noop_patch_keeps_resource_version(sim):
    _, _, made = call(sim.url(), "POST", DEPLOYS, deployment())
    _, _, same = call(sim.url(), "PATCH", DEPLOYS + "/llama-8b", {"spec": {"replicas": 2}},
                      content_type="application/merge-patch+json")
    assert same["metadata"]["resourceVersion"] == made["metadata"]["resourceVersion"]


def test_bad_input_is_a_status_never_a_crash(sim):
    cases = [
        ("POST", DEPLOYS, b"{not json", "application/json", 400, "BadRequest"),
        ("POST", DEPLOYS, b"[1,2]", "application/json", 400, "BadRequest"),
        ("GET", "/apis/apps/v1/namespaces/llm/widgets", None, "application/json", 404, "NotFound"),
        ("POST", "/api/v1/namespaces/llm/pods", json.dumps({"apiVersion": "v1", "kind": "Deployment",
                                                           "metadata": {"name": "x"}}).encode(),
         "application/json", 400, "BadRequest"),
        ("PATCH", DEPLOYS + "/llama-8b", b"{}", "text/plain", 415, "UnsupportedMediaType"),
        ("POST", DEPLOYS, b"x" * (3 * 1024 * 1024 + 1), "application/json", 413, "RequestEntityTooLarge"),
        ("GET", DEPLOYS + "?watch=true&timeoutSeconds=abc", None, "application/json", 400, "BadRequest"),
        ("GET", DEPLOYS + "?dryRun=Some", None, "application/json", 200, None),
    ]
    call(sim.url(), "POST", DEPLOYS, deployment())
    for method, path, raw, ctype, code, reason in cases:
        status, _, body = call(sim.url(), method, path, raw=raw, content_type=ctype)
        assert status == code, (method, path, body)
        if reason:
            assert (body["kind"], body["reason"], body["code"]) == ("Status", reason, code)
    assert call(sim.url(), "GET", "/version")[0] == 200  # still serving


def test_unknown_cluster_is_404(sim):
    status, _, body = call(sim.server.url, "GET", "/clusters/nope/api")
    assert (status, body["message"]) == (404, 'cluster "nope" is not served here')


def test_create_in_missing_namespace_is_404(sim):
    dep = deployment()
    dep["metadata"]["namespace"] = "ghost"
    status, _, body = call(sim.url(), "POST", "/apis/apps/v1/namespaces/ghost/deployments", dep)
    assert (status, body["message"]) == (404, 'namespaces "ghost" not found')


def test_scale_subresource(sim):
    call(sim.url(), "POST", DEPLOYS, deployment())
    _, _, scale = call(sim.url(), "GET", DEPLOYS + "/llama-8b/scale")
    assert (scale["kind"], scale["spec"]["replicas"], scale["status"]["selector"]) == ("Scale", 2, "app=llama-8b")
    _, _, scale = call(sim.url(), "PATCH", DEPLOYS + "/llama-8b/scale", {"spec": {"replicas": 4}},
                       content_type="application/merge-patch+json")
    assert scale["spec"]["replicas"] == 4
    assert call(sim.url(), "GET", DEPLOYS + "/llama-8b")[2]["spec"]["replicas"] == 4


def test_status_subresource_moves_only_status(sim):
    _, _, made = call(sim.url(), "POST", DEPLOYS, deployment())
    made["spec"]["replicas"] = 9
    made["status"] = {"observedGeneration": 1, "replicas": 2}
    _, _, after = call(sim.url(), "PUT", DEPLOYS + "/llama-8b/status", made)
    assert (after["spec"]["replicas"], after["status"]["replicas"]) == (2, 2)


def test_delete_cascades_to_owned_objects(sim):
    _, _, dep = call(sim.url(), "POST", DEPLOYS, deployment())
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {
        "name": "llama-8b-abc", "namespace": "llm", "labels": {"app": "llama-8b"},
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "llama-8b",
                             "uid": dep["metadata"]["uid"], "controller": True}]},
        "spec": dep["spec"] | {"strategy": None}}
    rs["spec"].pop("strategy")
    rs["spec"].pop("progressDeadlineSeconds")
    rs["spec"].pop("revisionHistoryLimit")
    assert call(sim.url(), "POST", "/apis/apps/v1/namespaces/llm/replicasets", rs)[0] == 201
    assert call(sim.url(), "DELETE", DEPLOYS + "/llama-8b")[0] == 200
    _, _, left = call(sim.url(), "GET", "/apis/apps/v1/namespaces/llm/replicasets")
    assert left["items"] == []


def test_unknown_fields_warn_by_default_and_fail_when_strict(sim):
    from vllm_remedy.sim.api.http import Request

    dep = deployment()
    dep["spec"]["replica"] = 3
    resp = sim.server.dispatch(Request("POST", "/clusters/a" + DEPLOYS, {}, {}, json.dumps(dep).encode()))
    assert (resp.status, resp.headers["Warning"]) == (201, '299 - "unknown field \\"spec.replica\\""')
    dep["metadata"]["name"] = "strict"
    resp = sim.server.dispatch(Request("POST", "/clusters/a" + DEPLOYS, {"fieldValidation": "Strict"}, {},
                                       json.dumps(dep).encode()))
    assert (resp.status, json.loads(resp.body)["message"]) == (
        400, 'Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: '
             'unknown field "spec.replica"')


def test_limit_and_continue_page_through_a_list(sim):
    for i in range(5):
        call(sim.url(), "POST", DEPLOYS, deployment(f"m{i}"))
    names, token, pages = [], "", 0
    while True:
        _, _, page = call(sim.url(), "GET", DEPLOYS + "?limit=2" + (f"&continue={token}" if token else ""))
        names += [d["metadata"]["name"] for d in page["items"]]
        pages += 1
        token = page["metadata"].get("continue", "")
        if not token:
            break
    assert (names, pages) == (["m0", "m1", "m2", "m3", "m4"], 3)
    status, _, body = call(sim.url(), "GET", DEPLOYS + "?limit=2&continue=garbage")
    assert (status, body["message"]) == (400, "continue key is not valid")
