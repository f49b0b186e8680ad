"""A KServe InferenceService host: the object, its serving runtime, the pod template its predictor makes, and the
pods of the Deployment KServe owns for it, with the classified startup logs of their crashes (one verb).

    pyinfra @k8s/<cluster>/<namespace>/inferenceservice/<name> \
        fact vllm_remedy.facts.inferenceservice.InferenceServiceState
"""

from __future__ import annotations

from typing import Any

from vllm_remedy.facts.base import JsonFact
from vllm_remedy.facts.pods import pods_data


class InferenceServiceState(JsonFact[dict[str, Any]]):
    """``inferenceservice``, ``runtime``, ``template`` and ``deployment`` (raw API dicts, ``deployment`` None
    until KServe created it), ``replicasets``, ``pods`` (the Pods fact's picture of the owned Deployment) and
    ``container``."""

    def command(self) -> str:
        return "k8s-inferenceservice"

    def build(self, document: dict[str, Any]) -> dict[str, Any]:
        owned = document.get("deployment") or {}
        replicasets = list(document.get("replicasets") or [])
        pods = pods_data(owned, replicasets, list(document.get("pods") or []), document.get("logs") or {},
                         document.get("container")) if owned else None
        return {"inferenceservice": dict(document.get("inferenceservice") or {}), "runtime": document.get("runtime"),
                "template": dict(document.get("template") or {}), "deployment": owned or None,
                "replicasets": replicasets, "pods": pods, "container": document.get("container")}
