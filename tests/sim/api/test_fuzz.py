"""Bad input of any shape gets a Kubernetes Status with a 4xx code — never a 500, never a crash."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vllm_remedy.sim.api.dispatch import ApiContext, handle
from vllm_remedy.sim.api.http import Request
from vllm_remedy.sim.cluster import Cluster

CLUSTER = Cluster("fuzz", speed=60)
CLUSTER.store.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "llm"}})
CTX = ApiContext(CLUSTER, "/clusters/fuzz")
PATHS = ["/apis/apps/v1/namespaces/llm/deployments", "/api/v1/namespaces/llm/pods", "/api/v1/nodes",
         "/apis/gateway.networking.k8s.io/v1/namespaces/llm/httproutes", "/apis/apps/v1/namespaces/llm/deployments/x",
         "/apis/apps/v1/namespaces/llm/deployments/x/scale", "/api/v1/namespaces/llm/pods/p/log",
         "/api/v1/namespaces/llm/configmaps", "/api/v1/nodes/n", "/api/v1/namespaces/llm/events",
         "/apis/gateway.networking.k8s.io/v1/namespaces/llm/httproutes/r"]
TYPES = ["application/json", "application/vnd.kubernetes.protobuf",
         "application/json-patch+json", "application/merge-patch+json",
         "application/strategic-merge-patch+json", "application/apply-patch+yaml", "text/plain"]
JSONISH = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                       lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                                  max_size=3), max_leaves=12)

META_KEYS = st.sampled_from(["name", "namespace", "labels", "annotations", "resourceVersion", "generateName",
                             "ownerReferences", "finalizers", "managedFields"])
OBJECTS = st.fixed_dictionaries(
    {"metadata": st.dictionaries(META_KEYS, JSONISH | st.just("x"), max_size=4)},
    optional={"spec": JSONISH, "status": JSONISH, "kind": st.sampled_from(["Deployment", "Pod", 3]),
              "apiVersion": st.sampled_from(["apps/v1", "v1", None]), "data": JSONISH})


def _check(resp) -> None:
    assert resp.status < 500, resp.body[:300]
    if resp.status >= 400:
        body = json.loads(resp.body)
        assert (body["kind"], body["code"]) == ("Status", resp.status)


def _store_still_readable() -> None:
    """Whatever was accepted must not poison later reads: selectors and tables over every resource."""
    for path in ("/apis/apps/v1/deployments", "/api/v1/pods", "/api/v1/configmaps", "/api/v1/nodes",
                 "/api/v1/events", "/apis/gateway.networking.k8s.io/v1/httproutes"):
        for accept in ("application/json", "application/json;as=Table;v=v1;g=meta.k8s.io"):
            resp = handle(CTX, Request("GET", path, {"labelSelector": "app=x"}, {"accept": accept}))
            assert resp.status == 200, resp.body[:300]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(method=st.sampled_from(["POST", "PUT", "PATCH", "DELETE"]), path=st.sampled_from(PATHS),
       ctype=st.sampled_from(TYPES), body=st.one_of(JSONISH.map(lambda v: json.dumps(v).encode()),
                                                    OBJECTS.map(lambda v: json.dumps(v).encode()),
                                                    st.binary(max_size=64),
                                                    st.binary(max_size=64).map(lambda b: b"k8s\x00" + b)),
       query=st.sampled_from(["", "dryRun=All", "fieldManager=f", "fieldManager=f&force=true", "dryRun=x"]))
def test_any_write_body_is_a_4xx_status(method, path, ctype, body, query):
    q = dict(p.split("=") for p in query.split("&")) if query else {}
    _check(handle(CTX, Request(method, path, q, {"content-type": ctype}, body)))
    _store_still_readable()


@settings(max_examples=150, deadline=None)
@given(labels=st.text(max_size=20), fields=st.text(max_size=20))
def test_any_selector_is_a_200_or_400(labels, fields):
    resp = handle(CTX, Request("GET", "/api/v1/namespaces/llm/pods",
                               {"labelSelector": labels, "fieldSelector": fields}))
    assert resp.status in (200, 400)
    _check(resp)


@settings(max_examples=150, deadline=None)
@given(path=st.lists(st.sampled_from(["api", "apis", "v1", "apps", "namespaces", "llm", "pods", "x", "log",
                                      "proxy", "status", "scale", "watch", "", "..", "%00"]), max_size=7))
def test_any_path_is_answered(path):
    _check(handle(CTX, Request("GET", "/" + "/".join(path), {"timeoutSeconds": "0"})))


@settings(max_examples=300, deadline=None)
@given(kind=st.sampled_from([("v1", "Pod"), ("v1", "ConfigMap"), ("apps/v1", "Deployment"), ("v1", "Namespace")]),
       payload=st.binary(max_size=80))
def test_any_protobuf_payload_decodes_or_is_rejected(kind, payload):
    from vllm_remedy.sim.api.openapi import _field  # the same wire encoder kubectl's bytes follow

    body = b"k8s\x00" + _field(1, _field(1, kind[0]) + _field(2, kind[1])) + _field(2, payload)
    path = {"Pod": "/api/v1/namespaces/llm/pods", "ConfigMap": "/api/v1/namespaces/llm/configmaps",
            "Deployment": "/apis/apps/v1/namespaces/llm/deployments", "Namespace": "/api/v1/namespaces"}[kind[1]]
    _check(handle(CTX, Request("POST", path, {"dryRun": "All"},
                               {"content-type": "application/vnd.kubernetes.protobuf"}, body)))
