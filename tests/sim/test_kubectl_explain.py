"""``kubectl explain`` (real kubectl 1.32) against the rehearsal cluster's OpenAPI v3, whose schemas come from the
official client's model classes."""

from __future__ import annotations

import pytest

from fixtures import sim_world
from vllm_remedy.sim.api import openapi_schemas

sim = sim_world.sim
V = "32"


def ok(got) -> str:
    assert got.returncode == 0, got.stderr
    return got.stdout


def test_explain_deployment_spec_strategy(sim):
    sim_world.require_kubectl(V)
    out = ok(sim.kubectl(V, "explain", "deployment.spec.strategy"))
    lines = out.splitlines()
    assert lines[:3] == ["GROUP:      apps", "KIND:       Deployment", "VERSION:    v1"]
    assert "FIELD: strategy <DeploymentStrategy>" in lines
    assert "DeploymentStrategy describes how to replace existing pods with new ones." in out
    assert any(line.split() == ["rollingUpdate", "<RollingUpdateDeployment>"] for line in lines)
    assert any(line.split() == ["type", "<string>"] for line in lines)
    assert 'Type of deployment. Can be "Recreate" or "RollingUpdate". Default is' in out
    surge = ok(sim.kubectl(V, "explain", "deployment.spec.strategy.rollingUpdate.maxSurge"))
    assert "FIELD: maxSurge <string>" in surge and "Defaults to 25%" in surge  # int-or-string, as kube shows it
    required = ok(sim.kubectl(V, "explain", "deployment.spec"))
    assert any(line.split() == ["selector", "<LabelSelector>", "-required-"] for line in required.splitlines())


def test_explain_a_field_that_does_not_exist_is_a_clear_error(sim):
    sim_world.require_kubectl(V)
    got = sim.kubectl(V, "explain", "deployment.spec.strategee")
    assert got.returncode == 1
    assert 'field "strategee" does not exist' in got.stderr


def test_explain_statefulset_update_strategy(sim):
    sim_world.require_kubectl(V)
    served = ok(sim.kubectl(V, "api-resources", "--api-group=apps", "-o", "name")).split()
    if "statefulsets.apps" not in served:
        pytest.skip("this rehearsal cluster does not serve StatefulSets yet (its schema is covered below)")
    out = ok(sim.kubectl(V, "explain", "statefulset.spec.updateStrategy"))
    assert "FIELD: updateStrategy <StatefulSetUpdateStrategy>" in out
    assert any(line.split() == ["rollingUpdate", "<RollingUpdateStatefulSetStrategy>"] for line in out.splitlines())


def test_statefulset_schema_reaches_update_strategy():
    """What explain walks for statefulset.spec.updateStrategy, generated from the client's V1StatefulSet."""
    schemas = openapi_schemas.schemas((("apps", "v1", "StatefulSet"),))
    root = schemas["io.k8s.api.v1.StatefulSet"]
    assert root["x-kubernetes-group-version-kind"] == [{"group": "apps", "kind": "StatefulSet", "version": "v1"}]
    spec = schemas["io.k8s.api.v1.StatefulSetSpec"]["properties"]["updateStrategy"]
    assert spec["allOf"] == [{"$ref": "#/components/schemas/io.k8s.api.v1.StatefulSetUpdateStrategy"}]
    strategy = schemas["io.k8s.api.v1.StatefulSetUpdateStrategy"]
    assert set(strategy["properties"]) == {"rollingUpdate", "type"}
    assert strategy["properties"]["type"]["description"].startswith("Type indicates the type of the StatefulSetUpdate")
