"""Server-side apply's field ownership as real kubectl 1.32 and the official Python client meet it: a field the
manager stops applying is pruned, another manager's field is a 409 unless forced, and managedFields say who owns
what."""

from __future__ import annotations

import json

import pytest
import yaml

from fixtures import sim_world

sim = sim_world.sim
V = "32"


def _service(labels: dict[str, str], ports: list[dict]) -> str:
    return yaml.safe_dump({"apiVersion": "v1", "kind": "Service",
                           "metadata": {"name": "gw", "namespace": "llm", "labels": labels},
                           "spec": {"selector": {"app": "gw"}, "ports": ports}})


def _owners(obj: dict) -> dict[str, dict]:
    return {e["manager"]: e["fieldsV1"] for e in obj["metadata"]["managedFields"] if e["operation"] == "Apply"}


def test_fields_a_manager_stops_applying_are_pruned_and_others_conflict(sim):
    sim_world.require_kubectl(V)
    k = sim.kubectl
    first = _service({"tier": "edge", "team": "llm"}, [{"name": "http", "port": 80}, {"name": "metrics", "port": 9090}])
    got = k(V, "apply", "--server-side", "--field-manager=gitops", "-f", "-", stdin=first)
    assert got.returncode == 0, got.stderr
    second = _service({"tier": "edge"}, [{"name": "http", "port": 80}])
    got = k(V, "apply", "--server-side", "--field-manager=gitops", "-f", "-", stdin=second)
    assert got.returncode == 0, got.stderr
    live = sim.clusters["a"].store.get("services", "llm", "gw")
    assert live["metadata"]["labels"] == {"tier": "edge"}  # pruned: nobody applies "team" any more
    assert [p["name"] for p in live["spec"]["ports"]] == ["http"]
    assert "f:team" not in json.dumps(_owners(live)["gitops"])

    from kubernetes import client, config
    from kubernetes.client.exceptions import ApiException

    core = client.CoreV1Api(config.new_client_from_config(str(sim.kubeconfig), context="a"))
    body = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "gw", "namespace": "llm",
                                                                "labels": {"tier": "internal"}}}
    with pytest.raises(ApiException) as clash:
        core.patch_namespaced_service("gw", "llm", body, field_manager="responder",
                                      _content_type="application/apply-patch+yaml")
    assert clash.value.status == 409
    assert 'conflict with "gitops"' in json.loads(clash.value.body)["message"]
    core.patch_namespaced_service("gw", "llm", body, field_manager="responder", force=True,
                                  _content_type="application/apply-patch+yaml")
    live = sim.clusters["a"].store.get("services", "llm", "gw")
    assert live["metadata"]["labels"] == {"tier": "internal"}
    owners = _owners(live)
    assert "f:tier" in json.dumps(owners["responder"]) and "f:tier" not in json.dumps(owners["gitops"])
    assert not [e for e in live["metadata"]["managedFields"] if e["operation"] == "Update"]  # applies only
    shown = k(V, "-n", "llm", "get", "svc", "gw", "--show-managed-fields", "-o",
              "jsonpath={.metadata.managedFields[*].manager}")
    assert shown.stdout.split() == ["gitops", "responder"]


def test_lightkube_apply_meets_the_same_ownership(sim):
    """A second client's server-side apply: conflict without force, takeover with it."""
    from lightkube import ApiError, Client, KubeConfig
    from lightkube.models.meta_v1 import ObjectMeta
    from lightkube.resources.core_v1 import Service

    sim_world.require_kubectl(V)
    got = sim.kubectl(V, "apply", "--server-side", "--field-manager=gitops", "-f", "-",
                      stdin=_service({"tier": "edge"}, [{"name": "http", "port": 80}]))
    assert got.returncode == 0, got.stderr
    kc = Client(KubeConfig.from_file(sim.kubeconfig).get(context_name="a"), field_manager="chatops")
    change = Service(metadata=ObjectMeta(name="gw", namespace="llm", labels={"tier": "canary"}))
    with pytest.raises(ApiError) as clash:
        kc.apply(change)
    assert clash.value.status.code == 409
    applied = kc.apply(change, force=True)
    assert applied.metadata.labels == {"tier": "canary"}
    assert [p.port for p in applied.spec.ports] == [80]  # gitops' fields untouched
