"""The Deployment of an ``@k8s`` host: the object as the API sent it, and its vLLM server in plain terms.

``object`` is kept verbatim because operations plan guarded patches against it (its resourceVersion is
the guard); the summary next to it is what a deploy file or an operator reads first.

    pyinfra inventories/local.py fact vllm_remedy.facts.deployment.Deployment
"""

from __future__ import annotations

from typing import Any

from vllm_remedy.facts.base import JsonFact, pod_spec, server_summary
from vllm_remedy.kube.gpus import pod_gpu_request
from vllm_remedy.kube.history import current_revision


def summarise_deployment(deployment: dict[str, Any], container: str | None = None) -> dict[str, Any]:
    """Plain-data view of a Deployment dict (pure; also used by tests and operations on fixtures)."""
    meta, spec, status = deployment.get("metadata") or {}, deployment.get("spec") or {}, deployment.get("status") or {}
    template = spec.get("template") or {}
    pods = pod_spec(deployment)
    strategy = spec.get("strategy") or {}
    return {
        "name": meta.get("name"),
        "namespace": meta.get("namespace"),
        "uid": meta.get("uid"),
        "resource_version": meta.get("resourceVersion"),
        "generation": meta.get("generation"),
        "revision": current_revision(deployment),
        "change_cause": (meta.get("annotations") or {}).get("kubernetes.io/change-cause"),
        "annotations": dict(meta.get("annotations") or {}),
        "paused": bool(spec.get("paused")),
        "replicas": {
            "desired": spec.get("replicas", 1),
            "current": status.get("replicas", 0),
            "updated": status.get("updatedReplicas", 0),
            "ready": status.get("readyReplicas", 0),
            "available": status.get("availableReplicas", 0),
            "unavailable": status.get("unavailableReplicas", 0),
        },
        "observed": int(status.get("observedGeneration") or 0) >= int(meta.get("generation") or 0),
        "strategy": {"type": strategy.get("type", "RollingUpdate"), **(strategy.get("rollingUpdate") or {})},
        "selector": dict(spec.get("selector") or {}),
        "template_annotations": dict((template.get("metadata") or {}).get("annotations") or {}),
        "node_selector": dict(pods.get("nodeSelector") or {}),
        "gpus_per_pod": pod_gpu_request(pods),
        "server": server_summary(pods, container),
    }


class Deployment(JsonFact[dict[str, Any]]):
    """The host's Deployment: ``object`` (raw API dict), ``server`` (vLLM image/model/flags) and status figures."""

    def command(self) -> str:
        return "k8s-deployment"

    def build(self, document: dict[str, Any]) -> dict[str, Any]:
        deployment = dict(document.get("deployment") or {})
        summary = summarise_deployment(deployment, document.get("container"))
        return {**summary, "context": document.get("context"),
                "annotation_prefix": document.get("annotation_prefix"), "object": deployment}
