"""Fact builders as pure functions: the commands they send, malformed answers → FactProcessError (the only
per-host error pyinfra handles), and GPU label variants / node states the rehearsal seed does not cover."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pyinfra.api.exceptions import FactProcessError

from vllm_remedy.facts.deployment import Deployment, summarise_deployment
from vllm_remedy.facts.history import RolloutHistory
from vllm_remedy.facts.nodes import GpuNodes, nodes_data
from vllm_remedy.facts.pods import ContainerLog, Pods, pods_data


def test_fact_names_are_their_module_paths() -> None:
    assert [f.name for f in (Deployment, RolloutHistory, Pods, ContainerLog, GpuNodes)] == [
        "vllm_remedy.facts.deployment.Deployment", "vllm_remedy.facts.history.RolloutHistory",
        "vllm_remedy.facts.pods.Pods", "vllm_remedy.facts.pods.ContainerLog", "vllm_remedy.facts.nodes.GpuNodes"]


def test_commands_are_verbs() -> None:
    assert Deployment().command() == "k8s-deployment"
    assert RolloutHistory().command() == "k8s-history"
    assert GpuNodes().command() == "k8s-nodes"
    assert Pods().command() == "k8s-pods --logs crashed"
    assert Pods().command(logs="all", tail=50) == "k8s-pods --logs all --tail 50"
    assert ContainerLog().command(pod="llama-8b-x", container="vllm", previous=True) == \
        "k8s-logs llama-8b-x vllm --previous"
    assert ContainerLog().command(pod="p q", container="c", tail=10) == "k8s-logs 'p q' c --tail 10"


@pytest.mark.parametrize(("lines", "message"), [
    (["{}", "{}"], "vllm_remedy.facts.deployment.Deployment: expected one JSON line from the @k8s connector, got 2 "
                   "(is this host an @k8s host?)"),
    (["Linux"], "vllm_remedy.facts.deployment.Deployment: the connector's answer is not JSON: Expecting value: "
                "line 1 column 1 (char 0)"),
    (["[1]"], "vllm_remedy.facts.deployment.Deployment: expected a JSON object, got list"),
])
def test_malformed_answers_are_fact_process_errors(lines: list[str], message: str) -> None:
    with pytest.raises(FactProcessError) as err:
        Deployment().process(lines)
    assert str(err.value) == message


def test_a_user_error_inside_a_builder_becomes_a_fact_process_error() -> None:
    dep = {"metadata": {"name": "x", "uid": "u"}, "spec": {"selector": {"matchLabels": {"app": "x"}}}}
    ok = RolloutHistory().process([json.dumps({"deployment": dep, "replicasets": []})])
    assert (ok["revisions"], ok["annotation_prefix"]) == ([], "vllm-remedy.io/")
    with pytest.raises(FactProcessError) as err:
        RolloutHistory().process([json.dumps({"deployment": dep, "replicasets": [], "annotation_prefix": "bad"})])
    assert str(err.value) == ("vllm_remedy.facts.history.RolloutHistory: annotation prefix 'bad': expected a DNS "
                              "subdomain followed by '/', e.g. vllm-remedy.io/")


def node(name: str, labels: dict[str, str], gpus: int = 1, *, ready: bool = True, cordoned: bool = False
         ) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels}, "spec": {"unschedulable": True} if cordoned else {},
            "status": {"capacity": {"nvidia.com/gpu": str(gpus)}, "allocatable": {"nvidia.com/gpu": str(gpus)},
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def pod(ns: str, name: str, node_name: str, gpus: int, labels: dict[str, str] | None = None,
        phase: str = "Running") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": ns, "labels": labels or {}},
            "spec": {"nodeName": node_name, "containers": [{"name": "c", "resources": {
                "limits": {"nvidia.com/gpu": str(gpus)}}}]},
            "status": {"phase": phase}}


def test_gpu_picture_folds_label_variants_and_counts_only_schedulable_free_gpus() -> None:
    nodes = [
        node("a100-mig", {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb"}, gpus=7),
        node("l40s-shared", {"nvidia.com/gpu.product": "NVIDIA-L40S-SHARED", "nvidia.com/gpu.memory": "46068"}, 4),
        node("l40s-cordoned", {"nvidia.com/gpu.product": "NVIDIA-L40S"}, 2, cordoned=True),
        node("l40s-notready", {"nvidia.com/gpu.product": "NVIDIA-L40S"}, 1, ready=False),
        node("cpu-only", {}, gpus=0),
    ]
    pods = [pod("llm", "llama-8b-1", "l40s-shared", 1, {"app": "llama-8b"}),
            pod("batch", "trainer", "l40s-shared", 2),
            pod("batch", "done", "l40s-shared", 1, phase="Succeeded"),
            pod("llm", "other", "a100-mig", 3, {"app": "qwen"})]
    got = nodes_data(nodes, pods, "llm", {"matchLabels": {"app": "llama-8b"}})
    assert [n["name"] for n in got["nodes"]] == ["a100-mig", "l40s-cordoned", "l40s-notready", "l40s-shared"]
    shared = got["nodes"][3]
    assert (shared["product"], shared["base_product"], shared["shared"], shared["memory_mib"], shared["requested"],
            shared["free"]) == ("NVIDIA-L40S-SHARED", "NVIDIA-L40S", True, 46068, 3, 1)
    assert shared["consumers"] == [{"pod": "batch/trainer", "gpus": 2, "ours": False},
                                   {"pod": "llm/llama-8b-1", "gpus": 1, "ours": True}]
    mig = got["nodes"][0]
    assert (mig["base_product"], mig["mig_profile"], mig["free"]) == ("NVIDIA-A100-SXM4-40GB", "1g.5gb", 4)
    assert (got["nodes"][1]["schedulable"], got["nodes"][2]["schedulable"]) == (False, False)
    assert got["products"] == {
        "NVIDIA-A100-SXM4-40GB": {"nodes": 1, "allocatable": 7, "requested": 3, "free": 4, "schedulable_free": 4},
        "NVIDIA-L40S": {"nodes": 3, "allocatable": 7, "requested": 3, "free": 4, "schedulable_free": 1}}
    assert got["deployment_pods"] == {"llm/llama-8b-1": "l40s-shared"}


def test_pods_data_marks_host_oom_without_a_log_and_keeps_log_errors() -> None:
    dep = {"metadata": {"name": "llama-8b", "uid": "d1"},
           "spec": {"selector": {"matchLabels": {"app": "llama-8b"}},
                    "template": {"metadata": {"labels": {"app": "llama-8b"}}, "spec": {"containers": []}}}}
    rs = {"metadata": {"name": "llama-8b-abc", "uid": "r1", "labels": {"app": "llama-8b"},
                       "annotations": {"deployment.kubernetes.io/revision": "7"},
                       "ownerReferences": [{"uid": "d1", "controller": True}]},
          "spec": {"template": dep["spec"]["template"]}}
    killed = {"name": "vllm", "restartCount": 2, "state": {"waiting": {"reason": "CrashLoopBackOff"}},
              "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}
    p = {"metadata": {"name": "llama-8b-abc-1", "labels": {"app": "llama-8b"},
                      "ownerReferences": [{"uid": "r1", "controller": True}]},
         "spec": {"nodeName": "n1"}, "status": {"phase": "Running", "containerStatuses": [killed]}}
    got = pods_data(dep, [rs], [p], {"llama-8b-abc-1/vllm": {"previous": True, "error": "rehearsal: HTTP 400"}},
                    container="vllm")
    assert (got["new_revision"], got["failures"], got["crash_looping"]) == (7, {"host_oom_killed": 1},
                                                                             ["llama-8b-abc-1"])
    row = got["pods"][0]
    assert (row["revision"], row["new"], row["host_oom_killed"]) == (7, True, True)
    assert row["containers"][0]["startup"] == {"failure": "host_oom_killed", "previous": True, "report": None,
                                               "log_error": "rehearsal: HTTP 400"}
    assert pods_data(dep, [rs], [p])["pods"][0]["containers"][0]["startup"] == {
        "failure": "host_oom_killed", "previous": None, "report": None}


def test_deployment_summary_without_a_vllm_server() -> None:
    dep = {"metadata": {"name": "gw", "namespace": "llm", "generation": 2},
           "spec": {"template": {"spec": {"containers": [{"name": "nginx", "image": "nginx"}]}}},
           "status": {"observedGeneration": 1}}
    got = summarise_deployment(dep)
    assert (got["server"], got["observed"], got["revision"], got["gpus_per_pod"], got["replicas"]["desired"]) == (
        None, False, 0, 0, 1)
