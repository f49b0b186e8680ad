"""A LeaderWorkerSet host's object, its ControllerRevision history and its pods, read together (one verb).

    pyinfra @k8s/<cluster>/<namespace>/leaderworkerset/<name> \
        fact vllm_remedy.facts.leaderworkerset.LeaderWorkerSetState
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vllm_remedy.facts.base import JsonFact
from vllm_remedy.facts.history import history_document, revision_row
from vllm_remedy.facts.pods import _pod_row
from vllm_remedy.kube.annotations import DEFAULT_PREFIX, Keys
from vllm_remedy.kube.health import pod_health
from vllm_remedy.kube.history import history_table
from vllm_remedy.kube.lws_history import REVISION_LABEL, controlled_revisions, lws_history, update_hash


def lws_pods_data(lws: Mapping[str, Any], revisions: list[Mapping[str, Any]], pods: list[Mapping[str, Any]],
                  logs: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The set's pods (leaders and workers) as the Pods fact's rows (pure), so the drift checks read an LWS as
    they read a Deployment: ``new`` when made from the current template (its template-revision-hash)."""
    number = {str(((r.get("metadata") or {}).get("labels") or {}).get(REVISION_LABEL) or ""):
              int(r.get("revision") or 0) for r in controlled_revisions(lws, revisions)}
    current = update_hash(lws, revisions)
    rows = []
    for pod in sorted(pods, key=lambda p: (p.get("metadata") or {}).get("name", "")):
        made_from = str(((pod.get("metadata") or {}).get("labels") or {}).get(REVISION_LABEL) or "")
        rows.append(_pod_row(pod, pod_health(pod), number.get(made_from), bool(current) and made_from == current,
                             logs or {}))
    return {"deployment": (lws.get("metadata") or {}).get("name"), "new_revision": number.get(current), "pods": rows}


def lws_history_data(lws: Mapping[str, Any], revisions: list[Mapping[str, Any]], *,
                     annotation_prefix: str = DEFAULT_PREFIX, container: str | None = None) -> dict[str, Any]:
    """The set's ControllerRevisions as the RolloutHistory fact's data (pure), so restore's evidence and decision
    (``remedies.evidence``, ``remedies.restore``) read an LWS as they read a Deployment or a StatefulSet: a row's
    ``replicaset`` names the ControllerRevision, its ``template`` is the leader's pod template (what runs the
    engine and what the memory model predicts)."""
    keys = Keys(annotation_prefix)
    history = lws_history(lws, revisions)
    return history_document(lws, history, [revision_row(r, keys, container) for r in history], keys,
                            next((r.number for r in history if r.current), None), "leaderworkerset")


class LeaderWorkerSetState(JsonFact[dict[str, Any]]):
    """``leaderworkerset`` and ``revisions`` (raw API dicts), ``pods``, ``history`` as a rollout history table, and
    ``rollout`` / ``pod_rows``: the RolloutHistory and Pods facts' shapes of the same reads."""

    def command(self) -> str:
        return "k8s-leaderworkerset"

    def build(self, document: dict[str, Any]) -> dict[str, Any]:
        lws = dict(document.get("leaderworkerset") or {})
        revisions = list(document.get("revisions") or [])
        container = document.get("container")
        return {"leaderworkerset": lws, "revisions": revisions, "pods": list(document.get("pods") or []),
                "container": container, "history": history_table(lws_history(lws, revisions)),
                "rollout": lws_history_data(lws, revisions, container=container,
                                            annotation_prefix=document.get("annotation_prefix") or DEFAULT_PREFIX),
                "pod_rows": lws_pods_data(lws, revisions, list(document.get("pods") or []), document.get("logs"))}
