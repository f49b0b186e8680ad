"""A LeaderWorkerSet rollout wait that fails fast: done when every group runs the current template and is Ready.

An LWS has no ``kubectl rollout status``; its status says how many groups are ready and updated. Like the
Deployment wait (:mod:`.wait`) this one stops as soon as a pod of the current template crash-loops (a
leader whose memory does not fit), with the classified log, rather than waiting out the timeout.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from vllm_remedy.kube.client import KubeClient
from vllm_remedy.kube.health import pod_health
from vllm_remedy.kube.lws_history import NAME_LABEL, REVISION_LABEL, WORKER_LABEL, update_hash
from vllm_remedy.kube.serving import ServingGate
from vllm_remedy.kube.set_wait import Seen, poll_set
from vllm_remedy.kube.wait import Clock, WaitResult

GROUP = "leaderworkerset.x-k8s.io"


def lws_path(namespace: str, name: str) -> str:
    """The API path of one LeaderWorkerSet."""
    return KubeClient.object_path(namespace, "leaderworkersets", name, f"{GROUP}/v1")


def read_set(client: KubeClient, namespace: str, name: str
             ) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """(the LeaderWorkerSet, its ControllerRevisions, its pods), read now."""
    lws = client.request("GET", lws_path(namespace, name))
    query = [("labelSelector", f"{NAME_LABEL}={name}")]
    revisions = client.request("GET", client.object_path(namespace, "controllerrevisions"), query=query)
    return lws, list(revisions.get("items") or []), client.list_pods(namespace, f"{NAME_LABEL}={name}")


def observed_generation(lws: Mapping[str, Any]) -> int | None:
    """The generation the LWS controller last acted on, or None when its release records none.

    kubernetes-sigs/lws writes ``status.observedGeneration`` and every condition's ``observedGeneration`` on each
    reconcile since v0.9.0 (#807: ``updateStatus`` and ``setConditions`` in
    pkg/controllers/leaderworkerset_controller.go@v0.9.0); before it neither exists (no such field in
    api/leaderworkerset/v1/leaderworkerset_types.go@v0.8.0, and ``makeCondition``@v0.8.0 sets none). The status
    field is read first; without it, the least of the conditions' (a condition without one counts as 0)."""
    status = lws.get("status") or {}
    if status.get("observedGeneration") is not None:
        return int(status["observedGeneration"])
    conditions = status.get("conditions") or []
    if any(c.get("observedGeneration") is not None for c in conditions):
        return min(int(c.get("observedGeneration") or 0) for c in conditions)
    return None


def synced(lws: Mapping[str, Any], revisions: Sequence[Mapping[str, Any]]) -> bool:
    """The controller has acted on the current spec, so the status no longer describes an older one.

    Where the set records no generation (a controller before v0.9.0), what stands in is the ControllerRevision of
    the current ``leaderWorkerTemplate``: the reconcile that first sees a template creates it
    (``Reconcile`` → ``getUpdatedRevision`` / ``CreateRevision`` in leaderworkerset_controller.go@v0.8.0), and its
    ``template-revision-hash`` label is the one that reconcile puts on the leader StatefulSet and so on the pods.
    It cannot be stale as the counts can, but it says nothing of ``replicas``: callers also require every live pod
    to carry that hash and the pod count to match, which an unsynced scale does not give."""
    seen = observed_generation(lws)
    if seen is not None:
        return seen >= int((lws.get("metadata") or {}).get("generation") or 0)
    return bool(update_hash(lws, revisions))


def fresh_pods(lws: Mapping[str, Any], revisions: Sequence[Mapping[str, Any]], pods: Sequence[dict[str, Any]]
               ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(live pods made from the current template, all live pods): live means not being deleted."""
    current = update_hash(lws, revisions)
    live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
    return [p for p in live if current and (p["metadata"].get("labels") or {}).get(REVISION_LABEL) == current], live


def groups_rolled_out(lws: Mapping[str, Any], revisions: Sequence[Mapping[str, Any]],
                      pods: Sequence[dict[str, Any]]) -> bool:
    """Every group Ready on the current template: the controller synced (:func:`synced`), its counts say so, and
    every live pod carries the current template-revision-hash and is Ready, ``replicas × size`` of them."""
    spec, status = lws.get("spec") or {}, lws.get("status") or {}
    replicas = int(spec.get("replicas", 1) or 0)
    size = int((spec.get("leaderWorkerTemplate") or {}).get("size", 1) or 1)
    fresh, live = fresh_pods(lws, revisions, pods)
    ready, updated = int(status.get("readyReplicas") or 0), int(status.get("updatedReplicas") or 0)
    return synced(lws, revisions) and ready == updated == replicas and len(fresh) == len(live) == replicas * size \
        and all(pod_health(p).ready for p in fresh)


def wait_for_lws_rollout(client: KubeClient, namespace: str, name: str, *, timeout: float = 900.0,
                         clock: Clock | None = None, interval: float = 2.0, restart_limit: int = 3,
                         fetch_log: bool = True, gate: ServingGate | None = None) -> WaitResult:
    """Poll until every group is Ready on the current template, failing fast on a crash loop; clock seconds. With a
    ``gate``, each group's leader, when its vLLM container has no probe, must also show it serves (its workers —
    ``--headless`` or a Ray node — print no serving line)."""

    def look() -> Seen:
        lws, revisions, pods = read_set(client, namespace, name)
        spec, status = lws.get("spec") or {}, lws.get("status") or {}
        replicas = int(spec.get("replicas", 1) or 0)
        size = int((spec.get("leaderWorkerTemplate") or {}).get("size", 1) or 1)
        ready, updated = int(status.get("readyReplicas") or 0), int(status.get("updatedReplicas") or 0)
        done = groups_rolled_out(lws, revisions, pods)
        fresh = fresh_pods(lws, revisions, pods)[0]
        return Seen(f"{updated} of {replicas} groups updated, {ready} ready",
                    f"leaderworkerset {name}: {replicas} groups of {size} pods ready" if done else None, fresh,
                    servers=[p for p in fresh if (p["metadata"].get("labels") or {}).get(WORKER_LABEL, "0") == "0"])

    return poll_set(client, namespace, f'leaderworkerset "{name}"', look, timeout=timeout, clock=clock,
                    interval=interval, restart_limit=restart_limit, fetch_log=fetch_log, gate=gate)
