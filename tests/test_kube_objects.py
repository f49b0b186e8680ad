"""API-shaped fixtures for the kube/ tests: the runbook's llama-8b Deployment and its ReplicaSets.

Shapes follow what a 1.32 API server returns (defaults filled in, ``creationTimestamp: null`` inside
templates, ownerReferences with ``controller: true``, revision annotations set by the controller),
as kube-apiserver and the deployment controller write them. Revision 14 is the good unit (max-model-len
16384 on L40S); 15 is the runbook's bad change (max-model-len dropped to the model default, nodeSelector moved to L4).
"""

from __future__ import annotations

import copy
from typing import Any

DEPLOY_UID = "5d9b6f0e-4c1a-4a59-9a55-0d7f2d1c8e14"
GOOD_ARGS = ["--model", "meta-llama/Llama-3.1-8B-Instruct", "--max-model-len", "16384",
             "--gpu-memory-utilization", "0.90", "--max-num-seqs", "64"]
BAD_ARGS = ["--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu-memory-utilization", "0.90",
            "--max-num-seqs", "64"]
OLD_ARGS = ["--model", "meta-llama/Llama-3.1-8B-Instruct", "--max-model-len", "8192"]


def pod_template(args: list[str], gpu_product: str, image: str = "vllm/vllm-openai:v0.8.5",
                 hash_label: str | None = None, env: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    labels = {"app": "llama-8b"}
    if hash_label:
        labels["pod-template-hash"] = hash_label
    container = {
        "name": "vllm", "image": image, "args": list(args),
        "ports": [{"name": "http", "containerPort": 8000, "protocol": "TCP"}],
        "env": env if env is not None else [{"name": "HF_HOME", "value": "/cache"}],
        "resources": {"limits": {"nvidia.com/gpu": "1"}, "requests": {"nvidia.com/gpu": "1"}},
        "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
        "imagePullPolicy": "IfNotPresent",
    }
    return {
        "metadata": {"creationTimestamp": None, "labels": labels},
        "spec": {
            "containers": [container], "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst", "nodeSelector": {"nvidia.com/gpu.product": gpu_product},
            "securityContext": {}, "schedulerName": "default-scheduler",
        },
    }


def deployment(template: dict[str, Any], revision: int, *, resource_version: str = "4242", generation: int = 7,
               extra_annotations: dict[str, str] | None = None, paused: bool = False) -> dict[str, Any]:
    notes = {"deployment.kubernetes.io/revision": str(revision),
             "kubectl.kubernetes.io/last-applied-configuration": '{"apiVersion":"apps/v1","kind":"Deployment"}\n'}
    notes.update(extra_annotations or {})
    spec: dict[str, Any] = {
        "replicas": 1, "selector": {"matchLabels": {"app": "llama-8b"}}, "template": copy.deepcopy(template),
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
        "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600,
    }
    if paused:
        spec["paused"] = True
    return {
        "kind": "Deployment", "apiVersion": "apps/v1",
        "metadata": {"name": "llama-8b", "namespace": "llm", "uid": DEPLOY_UID, "resourceVersion": resource_version,
                     "generation": generation, "creationTimestamp": "2025-03-01T09:00:00Z",
                     "labels": {"app": "llama-8b"}, "annotations": notes},
        "spec": spec,
        "status": {"observedGeneration": generation, "replicas": 1, "updatedReplicas": 1, "readyReplicas": 1,
                   "availableReplicas": 1},
    }


def replicaset(template_args: list[str], gpu_product: str, revision: int, hash_label: str, created: str, *,
               replicas: int = 0, change_cause: str | None = None, owner_uid: str = DEPLOY_UID,
               controller: bool = True, extra_annotations: dict[str, str] | None = None,
               image: str = "vllm/vllm-openai:v0.8.5") -> dict[str, Any]:
    notes = {"deployment.kubernetes.io/desired-replicas": "1", "deployment.kubernetes.io/max-replicas": "2",
             "deployment.kubernetes.io/revision": str(revision)}
    if change_cause:
        notes["kubernetes.io/change-cause"] = change_cause
    notes.update(extra_annotations or {})
    return {
        "kind": "ReplicaSet", "apiVersion": "apps/v1",
        "metadata": {
            "name": f"llama-8b-{hash_label}", "namespace": "llm", "uid": f"rs-{hash_label}",
            "resourceVersion": str(3000 + revision), "generation": 2, "creationTimestamp": created,
            "labels": {"app": "llama-8b", "pod-template-hash": hash_label}, "annotations": notes,
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "llama-8b",
                                 "uid": owner_uid, "controller": controller, "blockOwnerDeletion": True}],
        },
        "spec": {"replicas": replicas,
                 "selector": {"matchLabels": {"app": "llama-8b", "pod-template-hash": hash_label}},
                 "template": pod_template(template_args, gpu_product, image, hash_label)},
        "status": {"replicas": replicas, "observedGeneration": 2},
    }


def incident() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The runbook's state: revision 15 (bad) is current; 14 good; 13 older; plus an RS the Deployment
    does not control (same labels, another owner) that kubectl must ignore."""
    rs13 = replicaset(OLD_ARGS, "NVIDIA-L40S", 13, "6d8f7b9c5d", "2025-03-01T09:00:00Z",
                      change_cause="kubectl apply -f llama-8b.yaml")
    rs14 = replicaset(GOOD_ARGS, "NVIDIA-L40S", 14, "7c9d8f6b4f", "2025-03-02T10:00:00Z",
                      change_cause="max-model-len 16384")
    rs15 = replicaset(BAD_ARGS, "NVIDIA-L4", 15, "5f6c7d8b9a", "2025-03-03T11:00:00Z", replicas=1)
    stranger = replicaset(GOOD_ARGS, "NVIDIA-L40S", 99, "9b8c7d6f5b", "2025-03-04T12:00:00Z",
                          owner_uid="another-deployment-uid")
    dep = deployment(pod_template(BAD_ARGS, "NVIDIA-L4"), 15)
    return dep, [rs15, stranger, rs13, rs14]


def test_incident_fixture_is_consistent() -> None:
    dep, rss = incident()
    assert dep["spec"]["template"]["spec"]["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-L4"}
    assert sorted(rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"] for rs in rss) == [
        "13", "14", "15", "99"]
