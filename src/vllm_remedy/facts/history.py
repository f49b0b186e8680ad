"""The rollout history of an ``@k8s`` host as plain data: kubectl's revisions, known-good marks, change-causes.

Revisions come from ``kube.history.rollout_history`` (kubectl's rules: ReplicaSets the Deployment controls,
one row per revision number); each row adds what step 1 and step 3 of the runbook look at — the known-good
mark ``confirm`` left on its ReplicaSet and the vLLM image/model/flags of its template.

    pyinfra inventories/local.py fact vllm_remedy.facts.history.RolloutHistory
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from vllm_remedy.facts.base import JsonFact, server_summary
from vllm_remedy.kube.annotations import DEFAULT_PREFIX, Keys
from vllm_remedy.kube.history import Revision, current_revision, rollout_history


def revision_row(rev: Revision, keys: Keys, container: str | None) -> dict[str, Any]:
    """One revision as plain data: Revision's own fields (so ``kube.history.revisions_from_rows`` can rebuild it)
    plus the known-good mark and vLLM server that restore (step 1) and what-changed (step 3) read."""
    notes = rev.annotations
    return {
        "number": rev.number,
        "replicaset": rev.replicaset,
        "change_cause": rev.change_cause,
        "created": rev.created,
        "replicas": rev.replicas,
        "current": rev.current,
        "known_good": bool(notes.get(keys.known_good)),
        "known_good_at": notes.get(keys.known_good),
        "known_good_reason": notes.get(keys.known_good_reason),
        "server": server_summary(dict(rev.template.get("spec") or {}), container),
        "node_selector": dict((rev.template.get("spec") or {}).get("nodeSelector") or {}),
        "annotations": dict(notes),
        "template": rev.template,
    }


def history_data(deployment: Mapping[str, Any], replicasets: list[Mapping[str, Any]], *,
                 annotation_prefix: str = DEFAULT_PREFIX, container: str | None = None) -> dict[str, Any]:
    """Plain-data rollout history (pure; the fact's ``process`` and tests on fixtures share it)."""
    keys = Keys(annotation_prefix)
    revisions = rollout_history(deployment, replicasets)
    return history_document(deployment, revisions, [revision_row(r, keys, container) for r in revisions], keys,
                            current_revision(deployment))


def history_document(obj: Mapping[str, Any], revisions: Sequence[Revision], rows: list[dict[str, Any]], keys: Keys,
                     current: int | None, kind: str | None = None) -> dict[str, Any]:
    """The RolloutHistory fact's data for any workload whose revisions read as ``Revision``s (a Deployment's
    ReplicaSets, a StatefulSet's or LeaderWorkerSet's ControllerRevisions), so restore reads every kind alike;
    ``rows`` are the revisions' ``revision_row``s, ``kind`` is named for the kinds that are not a Deployment."""
    notes = (obj.get("metadata") or {}).get("annotations") or {}
    return {
        "deployment": (obj.get("metadata") or {}).get("name"),
        **({"kind": kind} if kind else {}),
        # our last write to the workload: a rollback reuses an old revision, so this says when it came back
        "last_action": notes.get(keys.last_action),
        "last_action_at": notes.get(keys.last_action_at),
        "last_action_template": notes.get(keys.last_action_template),
        "current_revision": current,
        "known_good": [r.number for r in revisions if r.annotations.get(keys.known_good)],
        "annotation_prefix": keys.prefix,
        "revisions": rows,
    }


class RolloutHistory(JsonFact[dict[str, Any]]):
    """``current_revision``, ``known_good`` (revision numbers) and ``revisions`` (ascending, one dict each)."""

    def command(self) -> str:
        return "k8s-history"

    def build(self, document: dict[str, Any]) -> dict[str, Any]:
        return history_data(document.get("deployment") or {}, list(document.get("replicasets") or []),
                            annotation_prefix=document.get("annotation_prefix") or DEFAULT_PREFIX,
                            container=document.get("container"))
