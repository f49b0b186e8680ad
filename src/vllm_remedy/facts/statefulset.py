"""A StatefulSet host's object, its ControllerRevision history and its pods, read together (one verb).

    pyinfra @k8s/<cluster>/<namespace>/statefulset/<name> fact vllm_remedy.facts.statefulset.StatefulSetState

Besides the raw objects, the fact carries the set's history and pods in the very shapes the RolloutHistory and
Pods facts give a Deployment (``rollout``, ``pod_rows``): a ControllerRevision stands where a ReplicaSet does,
so restore's evidence (``remedies.evidence``) and its decision (``remedies.restore``) read a StatefulSet
without a second copy of their rules. A pod's revision is the one its ``controller-revision-hash`` names.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from vllm_remedy.facts.base import JsonFact
from vllm_remedy.facts.history import history_document, revision_row
from vllm_remedy.facts.pods import _pod_row
from vllm_remedy.kube.annotations import DEFAULT_PREFIX, Keys, template_digest
from vllm_remedy.kube.health import pod_health
from vllm_remedy.kube.history import REVISION_HISTORY, earlier_numbers, history_table
from vllm_remedy.kube.sts_history import REVISION_LABEL, sts_history

#: Our restore's audit reason (``operations.statefulset``): "roll back to revision N (rule): why".
_RESTORED = re.compile(r"^roll back to revision (\d+) \(")


def restored_number(sts: Mapping[str, Any], keys: Keys) -> str | None:
    """The revision number our last restore rolled the set back to, while the set still runs the template that
    restore left (None otherwise). The controller renumbers the restored ControllerRevision to the top and keeps
    no record of its old number (a Deployment's ReplicaSet keeps ``revision-history``): ours is the record."""
    notes = (sts.get("metadata") or {}).get("annotations") or {}
    if notes.get(keys.last_action) != "restore" or notes.get(keys.last_action_template) != template_digest(
            (sts.get("spec") or {}).get("template")):
        return None
    match = _RESTORED.match(str(notes.get(keys.last_reason) or ""))
    return match[1] if match else None


def sts_history_data(sts: Mapping[str, Any], revisions: list[Mapping[str, Any]], *,
                     annotation_prefix: str = DEFAULT_PREFIX, container: str | None = None) -> dict[str, Any]:
    """The set's ControllerRevisions as the RolloutHistory fact's data (pure): ``replicaset`` names the revision."""
    keys = Keys(annotation_prefix)
    history = sts_history(sts, revisions)
    rows = [revision_row(r, keys, container) for r in history]
    restored = restored_number(sts, keys)
    for row in rows:  # the current revision's earlier number, where restore's rules read a Deployment's
        if row["current"] and restored and restored != str(row["number"]):
            earlier = [n for n in earlier_numbers(row["annotations"]) if n != restored]
            row["annotations"][REVISION_HISTORY] = ",".join([*earlier, restored])
    return history_document(sts, history, rows, keys, next((r.number for r in history if r.current), None),
                            "statefulset")


def sts_pods_data(sts: Mapping[str, Any], revisions: list[Mapping[str, Any]], pods: list[Mapping[str, Any]],
                  logs: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The set's pods as the Pods fact's rows (pure): ``new`` when made from the update revision."""
    number = {r.replicaset: r.number for r in sts_history(sts, revisions)}
    update = str((sts.get("status") or {}).get("updateRevision") or "")
    rows = []
    for pod in sorted(pods, key=lambda p: (p.get("metadata") or {}).get("name", "")):
        made_from = str(((pod.get("metadata") or {}).get("labels") or {}).get(REVISION_LABEL) or "")
        rows.append(_pod_row(pod, pod_health(pod), number.get(made_from), bool(update) and made_from == update,
                             logs or {}))
    return {"deployment": (sts.get("metadata") or {}).get("name"), "new_revision": number.get(update),
            "pods": rows}


class StatefulSetState(JsonFact[dict[str, Any]]):
    """``statefulset`` and ``revisions`` (raw API dicts), ``pods``, ``history`` (kubectl's rollout history table),
    and ``rollout`` / ``pod_rows``: the RolloutHistory and Pods facts' shapes of the same reads."""

    def command(self) -> str:
        return "k8s-statefulset"

    def build(self, document: dict[str, Any]) -> dict[str, Any]:
        sts = dict(document.get("statefulset") or {})
        revisions = list(document.get("revisions") or [])
        pods = list(document.get("pods") or [])
        container = document.get("container")
        return {"statefulset": sts, "revisions": revisions, "pods": pods, "container": container,
                "history": history_table(sts_history(sts, revisions)),
                "rollout": sts_history_data(sts, revisions, container=container,
                                            annotation_prefix=document.get("annotation_prefix") or DEFAULT_PREFIX),
                "pod_rows": sts_pods_data(sts, revisions, pods, document.get("logs"))}
