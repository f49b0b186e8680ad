"""Whether restore's rollback can finish: room for every pod of its target now, and a rollback of ours left stuck.

A rollback onto a GPU product with room for only some of its pods shows "fits", writes, and fails its wait minutes
later with pods Unschedulable (hostile15b F2, hostile16 G7); a rerun then found no crash loop and exited 0 while a
replica stayed Pending. The counting is the pin's (``remedies.pin_gpu.surge_room``: on the nodes the target's pods may
use, free GPUs plus those the workload's own pods hold, which the rollout frees), asked with no pod kept.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from vllm_remedy.kube.annotations import template_digest
from vllm_remedy.kube.errors import KubeError
from vllm_remedy.kube.gpus import pod_gpu_request
from vllm_remedy.operations.util import K8sHost
from vllm_remedy.remedies.pin_gpu import contested, ours_in, surge_room

#: Host data ``override`` that lets a rollback through when only some of its pods fit.
CAPACITY = "capacity"
#: The last-action restore's rollback writes (``kube.rollout.plan_undo``'s ``action``).
RESTORE = "restore"


def room_for(template: Mapping[str, Any], deployment: Mapping[str, Any], picture: Mapping[str, Any] | None,
             namespace: str, pending: Sequence[Mapping[str, Any]] = ()) -> tuple[int, int, tuple[str, ...]] | None:
    """(pods of ``template`` the cluster can place now, replicas wanted, other workloads' Pending GPU pods counted
    against it); None when its pods ask for no GPU or the nodes were not read. All the workload's GPUs count as
    free: a rollback replaces every pod (``surge_room`` with no pod kept) — but a Recreate rollout frees them while
    ``pending`` pods of other workloads that may go there wait in the scheduler's queue ahead of the new pods
    (``pin_gpu.contested``): each such rival counts as taking one freed slot."""
    spec = dict(template.get("spec") or {})
    gpus = pod_gpu_request(spec)
    if picture is None or gpus < 1:
        return None
    dep_spec = deployment.get("spec") or {}
    pods = list(picture.get("pods") or [])
    nodes = list(picture.get("nodes") or [])
    ours = ours_in([*pods, *pending], namespace, dep_spec.get("selector"))
    room = surge_room(spec, nodes, pods, ours, 0)
    freed, _, rivals = contested(spec, dict(dep_spec.get("strategy") or {}), nodes, pods, pending, ours)
    taken = min(len(rivals), freed // gpus)
    return max(0, room - taken), int(dep_spec.get("replicas", 1) or 0), rivals[:taken] if taken else ()


def capacity_refusal(revision: int, template: Mapping[str, Any], deployment: Mapping[str, Any],
                     picture: Mapping[str, Any] | None, namespace: str,
                     pending: Sequence[Mapping[str, Any]] = ()) -> str | None:
    """Why the rollback to ``revision`` cannot finish (fewer GPUs free for its pods than replicas), or None."""
    room = room_for(template, deployment, picture, namespace, pending)
    if room is None or room[0] >= room[1]:
        return None
    fit, replicas, rivals = room
    contest = (f"; Recreate stops every old pod first, and {len(rivals)} Pending GPU pod(s) of other workloads "
               f"({', '.join(rivals[:5])}{', ...' if len(rivals) > 5 else ''}) may take the GPUs it frees"
               if rivals else "")
    return (f"only {fit} of {replicas} pod(s) of revision {revision} fit on the nodes its pods may use now (free "
            f"GPUs and those this workload's pods hold{contest}): the rollback could not finish and would leave "
            f"{replicas - fit} pod(s) Pending; free GPUs, or restore anyway with --data override={CAPACITY}")


def stuck_rollback(history: Mapping[str, Any], pods: Mapping[str, Any]) -> str | None:
    """Why a rollback restore wrote is stuck: the template running is the one our last restore left, and new pods of
    it cannot be scheduled. None otherwise (no crash loop and nothing of ours stuck: nothing to restore)."""
    current = history.get("current_revision")
    row = next((r for r in history.get("revisions") or [] if r.get("number") == current), None)
    if row is None or history.get("last_action") != RESTORE or not history.get("last_action_template") \
            or history.get("last_action_template") != template_digest(row.get("template")):
        return None
    stuck = [r for r in pods.get("pods") or [] if r.get("unschedulable") and r.get("new") and not r.get("deleting")]
    if not stuck:
        return None
    return (f"the rollback to revision {current} restore wrote (at {history.get('last_action_at')}) is stuck: "
            f"{len(stuck)} new pod(s) cannot be scheduled ({stuck[0].get('name')}: {stuck[0].get('unschedulable')}); "
            "free GPUs (see deploys/diagnose.py, then deploys/pin_gpu.py) and it finishes by itself")


def recreate_rivals(ctx: K8sHost, deployment: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The cluster's Pending pods when the Deployment's strategy is Recreate (the GPUs its rollout frees are up for
    grabs), read once; [] for another strategy or when they cannot be listed (then only the free GPUs count)."""
    if ((deployment.get("spec") or {}).get("strategy") or {}).get("type") != "Recreate":
        return []
    try:
        return list(ctx.client.list_pods(None, field_selector="status.phase=Pending"))
    except KubeError:
        return []
