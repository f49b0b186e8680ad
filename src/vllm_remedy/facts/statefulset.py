"""A StatefulSet host's object, its ControllerRevision history and its pods, read together (one verb).

    pyinfra @k8s/<cluster>/<namespace>/statefulset/<name> fact vllm_remedy.facts.statefulset.StatefulSetState
"""

from __future__ import annotations

from typing import Any

from vllm_remedy.facts.base import JsonFact
from vllm_remedy.kube.history import history_table
from vllm_remedy.kube.sts_history import sts_history


class StatefulSetState(JsonFact[dict[str, Any]]):
    """``statefulset`` and ``revisions`` (raw API dicts), ``pods``, and ``history``: kubectl's rollout history table."""

    def command(self) -> str:
        return "k8s-statefulset"

    def build(self, document: dict[str, Any]) -> dict[str, Any]:
        sts = dict(document.get("statefulset") or {})
        revisions = list(document.get("revisions") or [])
        return {"statefulset": sts, "revisions": revisions, "pods": list(document.get("pods") or []),
                "container": document.get("container"), "history": history_table(sts_history(sts, revisions))}
