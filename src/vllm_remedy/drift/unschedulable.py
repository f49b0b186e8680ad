"""The ``unschedulable`` drift check: a workload serving nothing while its pods wait for a node (pure).

A Deployment whose only pod has been Pending (PodScheduled=False, Unschedulable) for 15 minutes serves nothing, yet
every other check passes (the template is right, the start is predicted to fit, nothing crash-loops): drift said "in
sync" and a scheduled job's metric read healthy (hostile15b F10). No Ready pod while pods of the workload are
unschedulable for longer than the policy's ``restore.rollout_timeout`` — the runbook's ``kubectl rollout status
--timeout``, so a rollout wait on it would have failed by then — is drift. How long is read from the pods' own
PodScheduled condition (the Pods fact's ``unschedulable_since``): the workload's conditions cannot date it, since a
scaled-up Deployment stays ``NewReplicaSetAvailable`` and a strategy allowing one unavailable pod calls 0 of 1 Ready
"available". A pod whose time is not known is listed, not judged. Its fix is no edit a deploy makes: the report says
to free a GPU or move the pods with deploys/pin_gpu.py (``report``), never to roll to a known-good unit.

The row is listed only when some live pod is unschedulable, like ``model-max-len``: an in-sync fleet's rows do not
change.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vllm_remedy.errors import UserError
from vllm_remedy.kube.annotations import parse_rfc3339
from vllm_remedy.policy import format_duration

UNSCHEDULABLE = "unschedulable"
#: What the report says instead of "roll to a known-good unit": no deploy makes room for a pod.
CAPACITY_FIX = ("no deploy makes room for Pending pods: free a GPU on a node they may use (another workload's pod, a "
                "cordoned node) or add nodes, or move them with deploys/pin_gpu.py to a product with room (it refuses "
                "one without)")


def _since(rows: list[Mapping[str, Any]]) -> float | None:
    """Cluster time since which the earliest of ``rows`` has been refused by the scheduler (its PodScheduled
    condition); None when no row says."""
    times = []
    for row in rows:
        try:
            times.append(parse_rfc3339(str(row["unschedulable_since"]), "PodScheduled"))
        except (KeyError, UserError):
            continue
    return min(times) if times else None


def unschedulable_verdict(workload: Mapping[str, Any], pods: Mapping[str, Any] | None, now: float,
                          after: float) -> tuple[bool, str] | None:
    """(drifted, detail) of the ``unschedulable`` row (``pods``: the Pods fact; ``now``: cluster time; ``after``:
    seconds a workload may serve nothing with pods unschedulable before it is drift), or None when no live pod is
    unschedulable (no row). ``checks.run_checks`` makes the row."""
    live = [r for r in (pods or {}).get("pods") or [] if not r.get("deleting")]
    waiting = [r for r in live if r.get("unschedulable")]
    if not waiting:
        return None
    ready = sum(1 for r in live if r.get("ready"))
    want = (workload.get("spec") or {}).get("replicas")
    want = want if isinstance(want, int) else len(live)
    message = " ".join(str(waiting[0]["unschedulable"]).split())
    said = f"{ready} of {want} Ready: {len(waiting)} Pending (Unschedulable: {message})"
    if ready:
        return False, f"{said}; the Ready pod(s) serve"
    since = _since(waiting)
    if since is None:
        return False, f"{said}; since when is not known"
    down, limit = format_duration(max(int(now - since), 0)), format_duration(int(after))
    if now - since < after:
        return False, f"{said}; unschedulable for {down}, within restore.rollout_timeout {limit}"
    return True, f"{said}; unschedulable for {down} with nothing Ready, longer than restore.rollout_timeout {limit}"
