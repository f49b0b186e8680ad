"""A LeaderWorkerSet host's object, its ControllerRevision history and its pods, read together (one verb).

    pyinfra @k8s/<cluster>/<namespace>/leaderworkerset/<name> \
        fact vllm_remedy.facts.leaderworkerset.LeaderWorkerSetState
"""

from __future__ import annotations

from typing import Any

from vllm_remedy.facts.base import JsonFact
from vllm_remedy.kube.history import history_table
from vllm_remedy.kube.lws_history import lws_history


class LeaderWorkerSetState(JsonFact[dict[str, Any]]):
    """``leaderworkerset`` and ``revisions`` (raw API dicts), ``pods``, and ``history`` as a rollout history table."""

    def command(self) -> str:
        return "k8s-leaderworkerset"

    def build(self, document: dict[str, Any]) -> dict[str, Any]:
        lws = dict(document.get("leaderworkerset") or {})
        revisions = list(document.get("revisions") or [])
        return {"leaderworkerset": lws, "revisions": revisions, "pods": list(document.get("pods") or []),
                "container": document.get("container"), "history": history_table(lws_history(lws, revisions))}
