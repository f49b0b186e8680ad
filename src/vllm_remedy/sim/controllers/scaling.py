"""Proportional scaling: where replicas go when a Deployment is scaled in the middle of a rollout.

Pure port of the controller's ``scale()``: with one active ReplicaSet it simply takes the new
count; with several (a rollout in flight, or stuck on a full GPU pool) the change is shared in
proportion to each ReplicaSet's size against its ``max-replicas`` annotation, leftovers to the
largest — so ``kubectl scale`` during a stuck rollout moves both the old and the new pods.
"""

from __future__ import annotations

from typing import Any

from vllm_remedy.sim.controllers import rollout as ro
from vllm_remedy.sim.controllers.util import DESIRED_REPLICAS, MAX_REPLICAS, creation_key, int_annotation

Obj = dict[str, Any]


def is_scaling_event(d: Obj, rses: list[Obj]) -> bool:
    """Some active ReplicaSet was sized for a different ``spec.replicas`` than the Deployment's now."""
    for rs in rses:
        if ro.replicas_of(rs, 0) > 0:
            notes = rs["metadata"].get("annotations") or {}
            if DESIRED_REPLICAS in notes and int_annotation(rs, DESIRED_REPLICAS) != ro.replicas_of(d):
                return True
    return False


def _fraction(rs: Obj, d: Obj) -> int:
    if ro.replicas_of(d) == 0:
        return -ro.replicas_of(rs, 0)
    allowed = ro.replicas_of(d) + ro.max_surge(d)
    annotated = int_annotation(rs, MAX_REPLICAS) or int((d.get("status") or {}).get("replicas", 0)) or 1
    return int(ro.replicas_of(rs, 0) * allowed / annotated + 0.5) - ro.replicas_of(rs, 0)


def scale_targets(d: Obj, new_rs: Obj | None, old: list[Obj]) -> dict[str, int]:
    """Replica count per ReplicaSet after a scaling event; every active one is listed so that its
    desired/max-replicas annotations are brought up to date even when its size stays."""
    everyone = [*old, *([new_rs] if new_rs else [])]
    active = [rs for rs in everyone if ro.replicas_of(rs, 0) > 0]
    want = ro.replicas_of(d)
    if len(active) <= 1:
        target = active[0] if active else (new_rs or (max(old, key=creation_key) if old else None))
        return {} if target is None else {target["metadata"]["name"]: want}
    if new_rs is not None and ro.replicas_of(new_rs, 0) == want and int_annotation(new_rs, DESIRED_REPLICAS) == want \
            and ro.status_count([new_rs], "availableReplicas") == want:
        return {rs["metadata"]["name"]: 0 for rs in old if ro.replicas_of(rs, 0) > 0}
    unchanged = {rs["metadata"]["name"]: ro.replicas_of(rs, 0) for rs in active}  # annotations still refresh
    if not ro.is_rolling(d):
        return unchanged
    allowed = want + ro.max_surge(d) if want > 0 else 0
    to_add = allowed - ro.spec_replicas(active)
    if to_add == 0:
        return unchanged
    # Bigger first; ties: newer first when growing, older first when shrinking.
    active.sort(key=lambda rs: creation_key(rs), reverse=to_add > 0)
    active.sort(key=lambda rs: ro.replicas_of(rs, 0), reverse=True)
    sizes: dict[str, int] = {}
    added = 0
    for rs in active:
        share = 0
        if to_add != added:
            share = min(_fraction(rs, d), to_add - added) if to_add > 0 else max(_fraction(rs, d), to_add - added)
        sizes[rs["metadata"]["name"]] = ro.replicas_of(rs, 0) + share
        added += share
    first = active[0]["metadata"]["name"]
    sizes[first] = max(sizes[first] + to_add - added, 0)
    return sizes
