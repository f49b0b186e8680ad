"""Rollout history exactly as kubectl computes it, over Deployment/ReplicaSet dicts from the API.

kubectl (``polymorphichelpers/history.go`` + ``util/deployment``): list ReplicaSets by the Deployment's
selector, keep those *controlled* by it (ownerReference uid + ``controller: true``), read the revision
from ``deployment.kubernetes.io/revision`` (missing = 0, unparsable = skipped) and the CHANGE-CAUSE
from the ReplicaSet's ``kubernetes.io/change-cause``. Templates compare equal ignoring
``pod-template-hash`` and empty-vs-absent fields, as Go's semantic DeepEqual does on typed structs.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from decimal import Decimal
from typing import Any

from vllm_remedy.kube.errors import RolloutError
from vllm_remedy.kube.selectors import matches

REVISION = "deployment.kubernetes.io/revision"
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
ROLLBACK_TO = "deprecated.deployment.rollback.to"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
CHANGE_CAUSE = "kubernetes.io/change-cause"
HASH_LABEL = "pod-template-hash"


@dataclass(frozen=True)
class Revision:
    """One row of ``kubectl rollout history``, with what ``--revision=N`` would show and where it lives."""

    number: int
    replicaset: str
    change_cause: str
    template: dict[str, Any]
    annotations: dict[str, str]
    created: str
    replicas: int
    current: bool


def revisions_from_rows(rows: Iterable[Mapping[str, Any]]) -> list[Revision]:
    """Revisions back from plain rows (the RolloutHistory fact's JSON), keeping only Revision's own fields."""
    names = [f.name for f in fields(Revision)]
    return [Revision(**{name: row[name] for name in names}) for row in rows]


def annotations(obj: Mapping[str, Any]) -> dict[str, str]:
    """An object's annotations as a new dict; {} when the API left them out."""
    return dict((obj.get("metadata") or {}).get("annotations") or {})


def revision_of(obj: Mapping[str, Any]) -> int | None:
    """kubectl's ``deploymentutil.Revision``: missing annotation → 0; not an integer → None (skipped)."""
    value = annotations(obj).get(REVISION)
    if value is None:
        return 0
    try:
        return int(value)
    except ValueError:
        return None


def is_controlled_by(obj: Mapping[str, Any], owner: Mapping[str, Any]) -> bool:
    """``metav1.IsControlledBy``: the controller ownerReference carries the owner's uid."""
    uid = (owner.get("metadata") or {}).get("uid")
    refs = (obj.get("metadata") or {}).get("ownerReferences") or []
    return bool(uid) and any(r.get("controller") is True and r.get("uid") == uid for r in refs)


def owned_replicasets(deployment: Mapping[str, Any], replicasets: Iterable[Mapping[str, Any]]) -> list[dict]:
    """ReplicaSets the Deployment's selector matches AND that it controls, oldest first (then by name)."""
    selector = (deployment.get("spec") or {}).get("selector")
    owned = [dict(rs) for rs in replicasets
             if matches(selector, (rs.get("metadata") or {}).get("labels")) and is_controlled_by(rs, deployment)]
    return sorted(owned, key=lambda rs: (rs["metadata"].get("creationTimestamp") or "", rs["metadata"]["name"]))


_QUANTITY_SUFFIX = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
                    "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": 1,
                    "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}


def quantity(value: Any) -> Any:
    """A resource quantity as a number, so ``1`` and ``1000m`` compare equal like resource.Quantity does."""
    text = str(value)
    for suffix in sorted(_QUANTITY_SUFFIX, key=len, reverse=True):
        if suffix and text.endswith(suffix):
            number, mult = text[: -len(suffix)], _QUANTITY_SUFFIX[suffix]
            break
    else:
        number, mult = text, 1
    try:
        return Decimal(number) * Decimal(mult)
    except ArithmeticError:
        return value


def _canonical(value: Any, path: tuple[str, ...] = ()) -> Any:
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            inner = _canonical(item, (*path, key))
            if inner is None or inner == {} or inner == []:
                continue
            out[key] = quantity(inner) if len(path) >= 1 and path[-1] in ("limits", "requests") else inner
        return out
    if isinstance(value, list):
        return [_canonical(v, path) for v in value]
    return value


def canonical_template(template: Mapping[str, Any] | None) -> dict[str, Any]:
    """The template without pod-template-hash, nulls or empty maps/lists, quantities as numbers."""
    tpl = copy.deepcopy(dict(template or {}))
    labels = (tpl.get("metadata") or {}).get("labels")
    if isinstance(labels, dict):
        labels.pop(HASH_LABEL, None)
    return _canonical(tpl)


def earlier_numbers(annotations: Mapping[str, Any]) -> list[str]:
    """The revision numbers a reused ReplicaSet had before (its ``deployment.kubernetes.io/revision-history``):
    a rollback renumbers the ReplicaSet it reuses, and the old numbers stay there."""
    return [n.strip() for n in str(annotations.get(REVISION_HISTORY) or "").split(",") if n.strip()]


#: ``kubectl rollout restart``'s template annotation: a new revision whose pods run exactly what ran before.
RESTARTED_AT = "kubectl.kubernetes.io/restartedAt"


def same_pod_spec(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> bool:
    """Templates that run the same pods: equal but for the hash label and ``rollout restart``'s stamp (rolling
    back from one to the other would only restart the pods)."""
    return canonical_template(without_restart(a)) == canonical_template(without_restart(b))


def without_restart(template: Mapping[str, Any] | None) -> dict[str, Any]:
    """``template`` without ``kubectl rollout restart``'s annotation (a copy)."""
    tpl = copy.deepcopy(dict(template or {}))
    notes = (tpl.get("metadata") or {}).get("annotations")
    if isinstance(notes, dict):
        notes.pop(RESTARTED_AT, None)
    return tpl


def templates_equal(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> bool:
    """kubectl's ``equalIgnoreHash``."""
    return canonical_template(a) == canonical_template(b)


def template_of(obj: Mapping[str, Any]) -> dict[str, Any]:
    """``spec.template`` of a Deployment or ReplicaSet ({} if absent): what kubectl compares, and restores on undo."""
    return dict((obj.get("spec") or {}).get("template") or {})


def find_new_replicaset(deployment: Mapping[str, Any], owned: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The oldest owned ReplicaSet whose template equals the Deployment's (``findNewReplicaSet``)."""
    for rs in owned:  # already oldest first
        if templates_equal(template_of(rs), template_of(deployment)):
            return rs
    return None


def all_replicasets(deployment: Mapping[str, Any], replicasets: Iterable[Mapping[str, Any]]
                    ) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """(all old ReplicaSets, the new one or None) — ``GetAllReplicaSets`` minus the replicas filter."""
    owned = owned_replicasets(deployment, replicasets)
    new = find_new_replicaset(deployment, owned)
    new_uid = new["metadata"].get("uid") if new else None
    old = [rs for rs in owned if new is None or rs["metadata"].get("uid") != new_uid]
    return old, new


def rollout_history(deployment: Mapping[str, Any], replicasets: Iterable[Mapping[str, Any]]) -> list[Revision]:
    """``kubectl rollout history``: one Revision per revision number, ascending; a later RS wins a tie."""
    old, new = all_replicasets(deployment, replicasets)
    by_number: dict[int, Revision] = {}
    for rs in [*old, *([new] if new else [])]:
        number = revision_of(rs)
        if number is None:
            continue
        notes = annotations(rs)
        by_number[number] = Revision(
            number=number, replicaset=rs["metadata"]["name"], change_cause=notes.get(CHANGE_CAUSE, ""),
            template=template_of(rs), annotations=notes, created=rs["metadata"].get("creationTimestamp") or "",
            replicas=int((rs.get("spec") or {}).get("replicas") or 0), current=rs is new)
    return [by_number[n] for n in sorted(by_number)]


def history_table(revisions: list[Revision]) -> str:
    """kubectl's table (tabwriter, padding 2), or its "No rollout history found." line."""
    if not revisions:
        return "No rollout history found."
    rows = [("REVISION", "CHANGE-CAUSE")] + [(str(r.number), r.change_cause or "<none>") for r in revisions]
    width = max(len(a) for a, _ in rows) + 2
    return "".join(f"{a.ljust(width)}{b}\n" for a, b in rows)


def revision_template(revisions: list[Revision], number: int) -> dict[str, Any]:
    """``rollout history --revision=N`` data: the RS template with its change-cause set as an annotation."""
    for rev in revisions:
        if rev.number == number:
            tpl = copy.deepcopy(rev.template)
            if rev.change_cause:
                tpl.setdefault("metadata", {}).setdefault("annotations", {})[CHANGE_CAUSE] = rev.change_cause
            return tpl
    raise RolloutError(f"unable to find the specified revision {number}")


def current_revision(deployment: Mapping[str, Any]) -> int:
    """The Deployment's own revision annotation (0 when the controller has not set one yet)."""
    return revision_of(deployment) or 0
