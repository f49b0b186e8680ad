"""Patch semantics the API applies: strategic merge keys and directives, merge patch, server-side apply."""

from __future__ import annotations

import pytest

from vllm_remedy.sim.api.apply import apply, record_update
from vllm_remedy.sim.api.patch import merge_patch, strategic_merge_patch
from vllm_remedy.sim.store import ApiError

POD = {"spec": {"containers": [
    {"name": "vllm", "image": "v1", "args": ["--a", "1"],
     "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
     "ports": [{"containerPort": 8000, "protocol": "TCP"}]},
    {"name": "sidecar", "image": "s1"}], "tolerations": [{"key": "x"}]}}


def test_containers_merge_by_name_and_args_replace():
    out = strategic_merge_patch(POD, {"spec": {"containers": [{"name": "vllm", "args": ["--b"]}]}})
    vllm = out["spec"]["containers"][0]
    assert (vllm["image"], vllm["args"], len(out["spec"]["containers"])) == ("v1", ["--b"], 2)


def test_env_merges_by_name_null_deletes_field():
    out = strategic_merge_patch(POD, {"spec": {"containers": [{"name": "vllm", "env": [
        {"name": "B", "value": "3"}, {"name": "C", "value": "4"}], "image": None}]}})
    vllm = out["spec"]["containers"][0]
    assert vllm["env"] == [{"name": "A", "value": "1"}, {"name": "B", "value": "3"}, {"name": "C", "value": "4"}]
    assert "image" not in vllm


def test_patch_delete_and_replace_directives():
    out = strategic_merge_patch(POD, {"spec": {"containers": [{"name": "sidecar", "$patch": "delete"}]}})
    assert [c["name"] for c in out["spec"]["containers"]] == ["vllm"]
    out = strategic_merge_patch(POD, {"spec": {"containers": [{"$patch": "replace"}, {"name": "only", "image": "o"}]}})
    assert out["spec"]["containers"] == [{"name": "only", "image": "o"}]
    out = strategic_merge_patch(POD, {"spec": {"$patch": "replace", "containers": []}})
    assert out["spec"] == {"containers": []}


def test_set_element_order_and_tolerations_replace():
    out = strategic_merge_patch(POD, {"spec": {
        "$setElementOrder/containers": [{"name": "sidecar"}, {"name": "vllm"}],
        "containers": [{"name": "vllm", "image": "v2"}], "tolerations": [{"key": "y"}]}})
    assert [(c["name"], c["image"]) for c in out["spec"]["containers"]] == [("sidecar", "s1"), ("vllm", "v2")]
    assert out["spec"]["tolerations"] == [{"key": "y"}]


def test_delete_from_primitive_list_and_retain_keys():
    out = strategic_merge_patch({"metadata": {"finalizers": ["a", "b"]}},
                                {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}})
    assert out["metadata"]["finalizers"] == ["b"]
    strategy = {"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}}
    out = strategic_merge_patch(strategy, {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}})
    assert out["spec"]["strategy"] == {"type": "Recreate"}


def test_merge_key_missing_is_400():
    with pytest.raises(ApiError) as err:
        strategic_merge_patch(POD, {"spec": {"containers": [{"image": "x"}]}})
    assert err.value.code == 400


def test_merge_patch_replaces_lists_and_null_deletes():
    out = merge_patch(POD, {"spec": {"containers": [{"name": "x"}], "tolerations": None}})
    assert out == {"spec": {"containers": [{"name": "x"}]}}


def _deploy(replicas: int, image: str = "v1") -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "llm"},
            "spec": {"replicas": replicas, "template": {"spec": {"containers": [{"name": "vllm", "image": image}]}}}}


def test_apply_creates_then_reapply_is_identical():
    made = apply(None, _deploy(2), "kubectl", False, "t0")
    assert made["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]["f:replicas"] == {}
    again = apply(made, _deploy(2), "kubectl", False, "t1")
    assert again == made


def test_apply_conflicts_with_another_managers_field_unless_forced():
    made = apply(None, _deploy(2), "kubectl", False, "t0")
    patched = _deploy(3)
    patched["metadata"]["managedFields"] = made["metadata"]["managedFields"]
    record_update(made, patched, "kubectl-patch", "t1")
    with pytest.raises(ApiError) as err:
        apply(patched, _deploy(5), "kubectl", False, "t2")
    assert (err.value.code, err.value.details["causes"][0]["field"]) == (409, ".spec.replicas")
    forced = apply(patched, _deploy(5), "kubectl", True, "t2")
    assert forced["spec"]["replicas"] == 5
    assert {e["manager"] for e in forced["metadata"]["managedFields"]} == {"kubectl"}


def test_apply_removes_fields_the_manager_stopped_applying():
    with_label = _deploy(2)
    with_label["metadata"]["labels"] = {"tier": "gold"}
    made = apply(None, with_label, "kubectl", False, "t0")
    after = apply(made, _deploy(2), "kubectl", False, "t1")
    assert "labels" not in after["metadata"]
