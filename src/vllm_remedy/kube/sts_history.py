"""StatefulSet rollout history, undo and status as kubectl computes them, over ControllerRevisions (pure).

kubectl (``polymorphichelpers/history.go``, ``rollback.go``, ``rollout_status.go``): list ControllerRevisions
by the set's selector, keep those *controlled* by it, number them by ``.revision``; CHANGE-CAUSE is the
revision's ``kubernetes.io/change-cause``. Undo without ``--to-revision`` takes the second-highest
revision ("no last revision to roll back to" with fewer than two) and is skipped when the set's
template already equals the revision's. What kubectl does not say, and an operator must know: an undo
changes pods only as the update strategy lets it — under OnDelete none until deleted, and under
OrderedReady not past a pod that is not Running and Ready (the docs' forced rollback) —
:func:`pods_blocking_rollback` names the pods that must be deleted for it to take effect.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vllm_remedy.kube.errors import RolloutError
from vllm_remedy.kube.history import CHANGE_CAUSE, Revision, annotations, is_controlled_by, templates_equal
from vllm_remedy.kube.rollout import resource_version_test
from vllm_remedy.kube.selectors import matches

REVISION_LABEL = "controller-revision-hash"


def revision_template(rev: Mapping[str, Any]) -> dict[str, Any]:
    """The pod template a ControllerRevision records (its ``data``, a ``$patch: replace`` of ``spec.template``)."""
    template = copy.deepcopy(((rev.get("data") or {}).get("spec") or {}).get("template") or {})
    template.pop("$patch", None)
    return template


def controlled_revisions(sts: Mapping[str, Any], revisions: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """ControllerRevisions the set's selector matches and the set controls, by revision number."""
    selector = (sts.get("spec") or {}).get("selector") or {}
    out = [dict(r) for r in revisions
           if matches(selector, (r.get("metadata") or {}).get("labels") or {}) and is_controlled_by(r, sts)]
    return sorted(out, key=lambda r: int(r.get("revision") or 0))


def sts_history(sts: Mapping[str, Any], revisions: Iterable[Mapping[str, Any]]) -> list[Revision]:
    """``kubectl rollout history sts/…``: one Revision per number, ascending (a later one wins a tie)."""
    update = str((sts.get("status") or {}).get("updateRevision") or "")
    by_number: dict[int, Revision] = {}
    for rev in controlled_revisions(sts, revisions):
        notes = annotations(rev)
        name = rev["metadata"]["name"]
        by_number[int(rev.get("revision") or 0)] = Revision(
            number=int(rev.get("revision") or 0), replicaset=name, change_cause=notes.get(CHANGE_CAUSE, ""),
            template=revision_template(rev), annotations=notes, created=rev["metadata"].get("creationTimestamp") or "",
            replicas=0, current=name == update)
    return [by_number[n] for n in sorted(by_number)]


def undo_target(sts: Mapping[str, Any], revisions: Sequence[Mapping[str, Any]], to_revision: int = 0
                ) -> dict[str, Any]:
    """The ControllerRevision ``kubectl rollout undo sts/… [--to-revision=N]`` restores."""
    if to_revision < 0:
        raise RolloutError(f"unable to find specified revision {to_revision} in history")
    owned = controlled_revisions(sts, revisions)
    if to_revision == 0:
        if len(owned) <= 1:
            raise RolloutError("no last revision to roll back to")
        return owned[-2]
    for rev in owned:
        if int(rev.get("revision") or 0) == to_revision:
            return rev
    raise RolloutError(f"unable to find specified revision {to_revision} in history")


@dataclass(frozen=True)
class StsUndoPlan:
    """What undo will do; ``patch`` (a guarded JSON patch) is empty when kubectl would skip."""

    namespace: str
    name: str
    revision: int
    controller_revision: str
    skipped: bool
    message: str
    patch: list[dict[str, Any]]
    template: dict[str, Any]


def plan_undo(sts: Mapping[str, Any], revisions: Sequence[Mapping[str, Any]], to_revision: int = 0) -> StsUndoPlan:
    """kubectl's undo decision; the write replaces ``spec.template`` with the revision's, guarded by resourceVersion."""
    meta = sts["metadata"]
    target = undo_target(sts, revisions, to_revision)
    template = revision_template(target)
    common = {"namespace": meta.get("namespace", ""), "name": meta["name"], "revision": int(target["revision"]),
              "controller_revision": target["metadata"]["name"], "template": template}
    if templates_equal(template, (sts.get("spec") or {}).get("template")):
        return StsUndoPlan(**common, skipped=True, patch=[],
                           message=f"skipped rollback (current template already matches revision {to_revision})")
    patch = [resource_version_test(sts), {"op": "replace", "path": "/spec/template", "value": template}]
    return StsUndoPlan(**common, skipped=False, message="rolled back", patch=patch)


def _running_and_ready(pod: Mapping[str, Any]) -> bool:
    status = pod.get("status") or {}
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])
    return status.get("phase") == "Running" and ready


def pods_blocking_rollback(sts: Mapping[str, Any], pods: Iterable[Mapping[str, Any]], target: str) -> list[str]:
    """Pods that keep a rollback to ControllerRevision ``target`` from taking effect until they are deleted.

    OnDelete: every pod not made from ``target``. RollingUpdate under OrderedReady: those of them that are not
    Running and Ready (the controller waits on them forever). Parallel RollingUpdate: none.
    """
    spec = sts.get("spec") or {}
    strategy = (spec.get("updateStrategy") or {}).get("type", "RollingUpdate")
    ordered = spec.get("podManagementPolicy", "OrderedReady") == "OrderedReady"
    out = []
    for pod in pods:
        meta = pod.get("metadata") or {}
        if meta.get("deletionTimestamp") or (meta.get("labels") or {}).get(REVISION_LABEL) == target:
            continue
        if strategy == "OnDelete" or (ordered and not _running_and_ready(pod)):
            out.append(str(meta.get("name")))
    return sorted(out)


def rollout_status(sts: Mapping[str, Any]) -> tuple[str, bool]:
    """``kubectl rollout status sts/…``: (its message, done); OnDelete raises kubectl's refusal."""
    spec, status = sts.get("spec") or {}, sts.get("status") or {}
    strategy = spec.get("updateStrategy") or {}
    if strategy.get("type", "RollingUpdate") != "RollingUpdate":
        raise RolloutError("rollout status is only available for RollingUpdate strategy type")
    generation = int((sts.get("metadata") or {}).get("generation") or 0)
    observed = int(status.get("observedGeneration") or 0)
    if observed == 0 or generation > observed:
        return "Waiting for statefulset spec update to be observed...\n", False
    replicas = spec.get("replicas")
    ready = int(status.get("readyReplicas") or 0)
    if replicas is not None and ready < int(replicas):
        return f"Waiting for {int(replicas) - ready} pods to be ready...\n", False
    updated = int(status.get("updatedReplicas") or 0)
    rolling = strategy.get("rollingUpdate")
    if rolling is not None:
        partition = rolling.get("partition")
        if replicas is not None and partition is not None and updated < int(replicas) - int(partition):
            return (f"Waiting for partitioned roll out to finish: {updated} out of {int(replicas) - int(partition)} "
                    "new pods have been updated...\n"), False
        return f"partitioned roll out complete: {updated} new pods have been updated...\n", True
    if status.get("updateRevision") != status.get("currentRevision"):
        return (f"waiting for statefulset rolling update to complete {updated} pods at revision "
                f"{status.get('updateRevision')}...\n"), False
    return (f"statefulset rolling update complete {int(status.get('currentReplicas') or 0)} pods at revision "
            f"{status.get('currentRevision')}...\n"), True
