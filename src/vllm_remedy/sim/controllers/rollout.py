"""Deployment rollout arithmetic, pure: fenceposts, replica targets, status and its conditions.

Mirrors pkg/controller/deployment/util so kubectl (``rollout status``) and users reading conditions
see what a real cluster would show, including the rounding of percentages (surge rounds up,
unavailable rounds down, and both zero means one may be unavailable).
"""

from __future__ import annotations

import math
from typing import Any

from vllm_remedy.sim.clock import parse_timestamp
from vllm_remedy.sim.controllers.util import condition, set_condition

Obj = dict[str, Any]

AVAILABLE, PROGRESSING = "Available", "Progressing"
NEW_RS_REASON = "NewReplicaSetCreated"
FOUND_NEW_RS_REASON = "FoundNewReplicaSet"
RS_UPDATED_REASON = "ReplicaSetUpdated"
NEW_RS_AVAILABLE_REASON = "NewReplicaSetAvailable"
TIMED_OUT_REASON = "ProgressDeadlineExceeded"
PAUSED_REASON = "DeploymentPaused"
RESUMED_REASON = "DeploymentResumed"


def replicas_of(obj: Obj, default: int = 1) -> int:
    """``spec.replicas`` with a caller-chosen default: 1 for a Deployment (the API default), 0 when
    summing ReplicaSets."""
    value = (obj.get("spec") or {}).get("replicas")
    return default if value is None else int(value)


def scaled_value(value: int | str | None, total: int, round_up: bool, default: str) -> int:
    """intstr.GetScaledValueFromIntOrPercent: ints as-is, "N%" of total rounded as asked."""
    if value is None:
        value = default
    if isinstance(value, int):
        return value
    text = str(value).strip()
    if text.endswith("%"):
        percent = float(text[:-1])
        exact = percent * total / 100
        return int(math.ceil(exact) if round_up else math.floor(exact))
    return int(text)


def is_rolling(d: Obj) -> bool:
    """RollingUpdate unless Recreate is asked for, matching the API default for a missing strategy."""
    return ((d.get("spec") or {}).get("strategy") or {}).get("type", "RollingUpdate") == "RollingUpdate"


def resolve_fenceposts(d: Obj) -> tuple[int, int]:
    """(maxSurge, maxUnavailable) as absolute pod counts."""
    rolling = ((d.get("spec") or {}).get("strategy") or {}).get("rollingUpdate") or {}
    replicas = replicas_of(d)
    surge = scaled_value(rolling.get("maxSurge"), replicas, True, "25%")
    unavailable = scaled_value(rolling.get("maxUnavailable"), replicas, False, "25%")
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def max_surge(d: Obj) -> int:
    """Extra pods a rollout may add over ``replicas``; zero under Recreate, which never surges."""
    return resolve_fenceposts(d)[0] if is_rolling(d) else 0


def max_unavailable(d: Obj) -> int:
    """Pods a rollout may take below ``replicas``, capped at it; zero for Recreate or zero replicas."""
    replicas = replicas_of(d)
    if not is_rolling(d) or replicas == 0:
        return 0
    return min(resolve_fenceposts(d)[1], replicas)


def progress_deadline(d: Obj) -> int | None:
    """progressDeadlineSeconds (600 by default); None when explicitly null, which drops the Progressing
    condition altogether."""
    value = (d.get("spec") or {}).get("progressDeadlineSeconds", 600)
    return None if value is None else int(value)


def spec_replicas(rses: list[Obj]) -> int:
    """Desired pods summed over ReplicaSets (GetReplicaCountForReplicaSets), the base of surge arithmetic."""
    return sum(replicas_of(rs, 0) for rs in rses)


def status_count(rses: list[Obj], field: str) -> int:
    """A status counter summed over ReplicaSets, missing as 0 because the API omits zero counts."""
    return sum(int((rs.get("status") or {}).get(field, 0) or 0) for rs in rses)


def new_rs_new_replicas(d: Obj, all_rses: list[Obj], new_rs: Obj | None) -> int:
    """How many replicas the new ReplicaSet may have now (NewRSNewReplicas)."""
    if not is_rolling(d):
        return replicas_of(d)
    current_new = replicas_of(new_rs, 0) if new_rs else 0
    if current_new >= replicas_of(d):
        return current_new
    surge = resolve_fenceposts(d)[0]
    current = spec_replicas(all_rses)
    max_total = replicas_of(d) + surge
    if current >= max_total:
        return current_new
    scale_up = min(max_total - current, replicas_of(d) - current_new)
    return current_new + scale_up


def new_condition(type_: str, status: str, reason: str, message: str, now: str) -> Obj:
    """A DeploymentCondition stamped ``now`` twice; set_condition keeps the old transition time when the
    status did not change."""
    return {"type": type_, "status": status, "lastUpdateTime": now, "lastTransitionTime": now,
            "reason": reason, "message": message}


def calculate_status(d: Obj, all_rses: list[Obj], new_rs: Obj | None, now: str) -> Obj:
    """The Deployment status a sync would write, conditions copied from the current status."""
    available = status_count(all_rses, "availableReplicas")
    total = spec_replicas(all_rses)
    old = d.get("status") or {}
    fields = {
        "replicas": status_count(all_rses, "replicas"),
        "updatedReplicas": status_count([new_rs], "replicas") if new_rs else 0,
        "readyReplicas": status_count(all_rses, "readyReplicas"),
        "availableReplicas": available,
        "unavailableReplicas": max(total - available, 0),
    }
    status: Obj = {"observedGeneration": d.get("metadata", {}).get("generation", 1)}
    status.update({k: v for k, v in fields.items() if v})  # omitempty, as the real API serialises
    if old.get("collisionCount"):
        status["collisionCount"] = old["collisionCount"]
    status["conditions"] = [dict(c) for c in old.get("conditions") or []]
    if available >= replicas_of(d) - max_unavailable(d):
        cond = new_condition(AVAILABLE, "True", "MinimumReplicasAvailable", "Deployment has minimum availability.", now)
    else:
        cond = new_condition(AVAILABLE, "False", "MinimumReplicasUnavailable",
                             "Deployment does not have minimum availability.", now)
    set_condition(status, cond)
    return status


def deployment_complete(d: Obj, status: Obj) -> bool:
    """DeploymentComplete: all replicas updated and available at the observed generation, the moment
    Progressing turns NewReplicaSetAvailable."""
    want = replicas_of(d)
    return (status.get("updatedReplicas", 0) == want and status.get("replicas", 0) == want
            and status.get("availableReplicas", 0) == want
            and status.get("observedGeneration", 0) >= d.get("metadata", {}).get("generation", 1))


def deployment_progressing(d: Obj, status: Obj) -> bool:
    """DeploymentProgressing: some counter moved forward (more updated/ready/available, fewer old), which
    is what renews the progress deadline."""
    old = d.get("status") or {}
    old_old = old.get("replicas", 0) - old.get("updatedReplicas", 0)
    new_old = status.get("replicas", 0) - status.get("updatedReplicas", 0)
    return (status.get("updatedReplicas", 0) > old.get("updatedReplicas", 0) or new_old < old_old
            or status.get("readyReplicas", 0) > old.get("readyReplicas", 0)
            or status.get("availableReplicas", 0) > old.get("availableReplicas", 0))


def deployment_timed_out(d: Obj, status: Obj, now: float) -> bool:
    """DeploymentTimedOut: Progressing not updated for longer than the deadline; once reported it sticks
    until progress resumes, so ``rollout status`` fails instead of waiting."""
    deadline = progress_deadline(d)
    cond = condition(status, PROGRESSING)
    if deadline is None or cond is None or cond.get("reason") == NEW_RS_AVAILABLE_REASON:
        return False
    if cond.get("reason") == TIMED_OUT_REASON:
        return True
    return parse_timestamp(cond["lastUpdateTime"]) + deadline < now


def rollout_status_message(d: Obj) -> tuple[bool, str]:
    """What ``kubectl rollout status`` prints for this object: (done, message); errors say "error:"."""
    name = d["metadata"]["name"]
    status = d.get("status") or {}
    if d["metadata"].get("generation", 1) > status.get("observedGeneration", 0):
        return False, "Waiting for deployment spec update to be observed..."
    cond = condition(status, PROGRESSING)
    if cond is not None and cond.get("reason") == TIMED_OUT_REASON:
        return False, f'error: deployment "{name}" exceeded its progress deadline'
    want, updated = replicas_of(d), status.get("updatedReplicas", 0)
    if updated < want:
        return False, (f'Waiting for deployment "{name}" rollout to finish: {updated} out of {want} '
                       "new replicas have been updated...")
    if status.get("replicas", 0) > updated:
        return False, (f'Waiting for deployment "{name}" rollout to finish: '
                       f"{status.get('replicas', 0) - updated} old replicas are pending termination...")
    if status.get("availableReplicas", 0) < updated:
        return False, (f'Waiting for deployment "{name}" rollout to finish: '
                       f"{status.get('availableReplicas', 0)} of {updated} updated replicas are available...")
    return True, f'deployment "{name}" successfully rolled out'
