"""A StatefulSet rollout wait with ``kubectl rollout status sts/…`` semantics that fails fast.

Like the Deployment wait (:mod:`.wait`), it stops as soon as a pod of the update revision crash-loops, with
the classified log. It also stops when the set cannot move at all: a pod left on another revision that the
controller will never replace by itself — any such pod under OnDelete, or one that is not Running and
Ready under OrderedReady — and names the pods to delete, since waiting longer changes nothing.
"""

from __future__ import annotations

from typing import Any

from vllm_remedy.kube.client import KubeClient
from vllm_remedy.kube.health import pod_health
from vllm_remedy.kube.selectors import selector_string
from vllm_remedy.kube.set_wait import BLOCKED, Seen, poll_set
from vllm_remedy.kube.sts_history import REVISION_LABEL, pods_blocking_rollback, rollout_status
from vllm_remedy.kube.wait import Clock, WaitResult, crashing_container

__all__ = ["BLOCKED", "blocked_message", "read_set", "stuck_pods", "wait_for_sts_rollout"]


def read_set(client: KubeClient, namespace: str, name: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(the StatefulSet, the pods its selector matches), read now."""
    sts = client.request("GET", client.object_path(namespace, "statefulsets", name))
    selector = selector_string((sts.get("spec") or {}).get("selector"))
    return sts, client.list_pods(namespace, selector)


def stuck_pods(sts: dict[str, Any], pods: list[dict[str, Any]], restart_limit: int = 3) -> list[str]:
    """Pods the set will never move off a revision other than its update revision by itself: under OnDelete all of
    them; under OrderedReady those crash-looping or unschedulable (not one that is merely starting)."""
    update = str((sts.get("status") or {}).get("updateRevision") or "")
    blocking = pods_blocking_rollback(sts, pods, update) if update else []
    if ((sts.get("spec") or {}).get("updateStrategy") or {}).get("type") == "OnDelete":
        return blocking
    stuck = {p["metadata"]["name"] for p in pods if crashing_container(pod_health(p), restart_limit)
             or pod_health(p).unschedulable}
    return [n for n in blocking if n in stuck]


def blocked_message(sts: dict[str, Any], pods: list[str]) -> str:
    """Why the set will not reach its update revision on its own, and what would make it."""
    spec = sts.get("spec") or {}
    why = ("updateStrategy OnDelete replaces a pod only when it is deleted"
           if (spec.get("updateStrategy") or {}).get("type") == "OnDelete"
           else "podManagementPolicy OrderedReady does not move past a pod that is not Running and Ready")
    return f"statefulset {sts['metadata']['name']}: {why}: delete pod {', '.join(pods)} for the change to take effect"


def wait_for_sts_rollout(client: KubeClient, namespace: str, name: str, *, timeout: float = 900.0,
                         clock: Clock | None = None, interval: float = 2.0, restart_limit: int = 3,
                         fetch_log: bool = True, unschedulable_grace: float | None = 60.0) -> WaitResult:
    """Poll until rolled out, failing fast on a crash loop, a pod of the update revision Unschedulable for
    ``unschedulable_grace`` seconds, or a set that cannot move; clock seconds throughout."""

    def look() -> Seen:
        sts, pods = read_set(client, namespace, name)
        status = sts.get("status") or {}
        update = str(status.get("updateRevision") or "")
        on_delete = ((sts.get("spec") or {}).get("updateStrategy") or {}).get("type") == "OnDelete"
        text, finished = ("", False) if on_delete else rollout_status(sts)
        fresh = [p for p in pods if (p["metadata"].get("labels") or {}).get(REVISION_LABEL) == update
                 and not p["metadata"].get("deletionTimestamp")]
        observed = int(status.get("observedGeneration") or 0) >= int(sts["metadata"].get("generation") or 0)
        blocking = stuck_pods(sts, pods, restart_limit) if observed else []
        replicas = int((sts.get("spec") or {}).get("replicas", 1) or 0)
        # a RollingUpdate partition keeps the pods below it on their revision: the rollout ends at it, as kubectl's
        partition = 0 if on_delete else int(
            (((sts.get("spec") or {}).get("updateStrategy") or {}).get("rollingUpdate") or {}).get("partition") or 0)
        done = not blocking and observed and len(fresh) >= replicas - partition and all(
            pod_health(p).ready for p in fresh) and (finished or on_delete)
        return Seen(text, (text.strip() or f"statefulset {name}: {replicas} pods at {update}") if done else None,
                    fresh if observed else [],  # before the controller saw the write, "fresh" is the old revision
                    blocked_message(sts, blocking) if blocking else None)

    return poll_set(client, namespace, f'statefulset "{name}"', look, timeout=timeout, clock=clock,
                    interval=interval, restart_limit=restart_limit, fetch_log=fetch_log,
                    unschedulable_grace=unschedulable_grace)
