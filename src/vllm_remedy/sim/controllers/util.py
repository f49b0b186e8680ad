"""Small helpers shared by the controllers: owner references, label selectors, pod readiness."""

from __future__ import annotations

from typing import Any

from vllm_remedy.sim.clock import parse_timestamp

Obj = dict[str, Any]

REVISION = "deployment.kubernetes.io/revision"
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
CHANGE_CAUSE = "kubernetes.io/change-cause"


def controller_ref(obj: Obj) -> Obj | None:
    """The ownerReference with ``controller: true`` (the object that manages this one), if any."""
    for ref in obj.get("metadata", {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return ref
    return None


def owner_ref(owner: Obj) -> Obj:
    """A controller ownerReference to ``owner``, with blockOwnerDeletion set as the real controllers do."""
    meta = owner["metadata"]
    return {
        "apiVersion": owner.get("apiVersion", ""), "kind": owner.get("kind", ""), "name": meta["name"],
        "uid": meta.get("uid", ""), "controller": True, "blockOwnerDeletion": True,
    }


def controlled_by(obj: Obj, owner_uid: str) -> bool:
    """Ownership by uid, not name, so a re-created owner of the same name does not adopt old children."""
    ref = controller_ref(obj)
    return ref is not None and ref.get("uid") == owner_uid


def selector_matches(selector: Obj | None, labels: dict[str, str] | None) -> bool:
    """metav1.LabelSelector semantics; an empty or missing selector matches nothing here (apps/v1)."""
    if not selector:
        return False
    labels = labels or {}
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    return all(expression_matches(expr, labels) for expr in selector.get("matchExpressions") or [])


def expression_matches(expr: Obj, labels: dict[str, str]) -> bool:
    """One In / NotIn / Exists / DoesNotExist (and node-affinity Gt / Lt) requirement."""
    key, op, values = expr.get("key", ""), expr.get("operator", ""), [str(v) for v in expr.get("values") or []]
    present = key in labels
    if op == "In":
        return present and labels[key] in values
    if op == "NotIn":
        return not present or labels[key] not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt") and present and values:
        try:
            have, want = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return have > want if op == "Gt" else have < want
    return False


def int_annotation(obj: Obj, key: str) -> int:
    """An integer annotation (revision, desired/max-replicas); 0 when missing or malformed, so a
    hand-edited annotation never breaks a sync."""
    try:
        return int((obj.get("metadata", {}).get("annotations") or {}).get(key, "0"))
    except ValueError:
        return 0


def revision(rs: Obj) -> int:
    """The ``deployment.kubernetes.io/revision`` number that ``rollout history`` lists and undo targets."""
    return int_annotation(rs, REVISION)


def condition(status: Obj, type_: str) -> Obj | None:
    """Conditions are a list keyed by type in the API; look one up by type, None when absent."""
    for cond in status.get("conditions") or []:
        if cond.get("type") == type_:
            return cond
    return None


def pod_ready(pod: Obj) -> bool:
    """Ready condition True: what readyReplicas counts and what Services route to."""
    cond = condition(pod.get("status") or {}, "Ready")
    return cond is not None and cond.get("status") == "True"


def pod_available(pod: Obj, min_ready_seconds: int, now: float) -> bool:
    """Ready for at least ``minReadySeconds`` (what counts towards availableReplicas)."""
    cond = condition(pod.get("status") or {}, "Ready")
    if cond is None or cond.get("status") != "True":
        return False
    if min_ready_seconds <= 0:
        return True
    since = cond.get("lastTransitionTime")
    return since is not None and parse_timestamp(since) + min_ready_seconds <= now


def pod_active(pod: Obj) -> bool:
    """Counts towards a ReplicaSet: not finished and not being deleted."""
    phase = (pod.get("status") or {}).get("phase")
    return phase not in ("Succeeded", "Failed") and not pod.get("metadata", {}).get("deletionTimestamp")


def creation_key(obj: Obj) -> tuple[str, str]:
    """Oldest first by creationTimestamp, name breaking ties since timestamps have second precision."""
    meta = obj.get("metadata", {})
    return meta.get("creationTimestamp", ""), meta.get("name", "")


def set_condition(status: Obj, cond: Obj) -> bool:
    """Kubernetes' SetDeploymentCondition: unchanged status+reason is a no-op; same status keeps
    lastTransitionTime; the new condition goes to the end of the list. Returns whether it changed."""
    conditions = status.get("conditions") or []
    current = next((c for c in conditions if c.get("type") == cond["type"]), None)
    if current is not None and current.get("status") == cond["status"] and current.get("reason") == cond["reason"]:
        return False
    if current is not None and current.get("status") == cond["status"]:
        cond["lastTransitionTime"] = current.get("lastTransitionTime", cond["lastTransitionTime"])
    status["conditions"] = [c for c in conditions if c.get("type") != cond["type"]] + [cond]
    return True


def go_duration(seconds: float) -> str:
    """Go's time.Duration.String() for whole seconds: 10s, 1m20s, 5m0s."""
    total = int(seconds)
    minutes, secs = divmod(total, 60)
    return f"{minutes}m{secs}s" if minutes else f"{secs}s"


def internal_ip(node: Obj) -> str:
    """The node's InternalIP address (the pod's hostIP), or "" when it has none."""
    for address in (node.get("status") or {}).get("addresses") or []:
        if address.get("type") == "InternalIP":
            return str(address.get("address", ""))
    return ""
