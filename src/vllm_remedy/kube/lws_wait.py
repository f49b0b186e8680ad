"""A LeaderWorkerSet rollout wait that fails fast: done when every group runs the current template and is Ready.

An LWS has no ``kubectl rollout status``; its status says how many groups are ready and updated. Like the
Deployment wait (:mod:`.wait`) this one stops as soon as a pod of the current template crash-loops (a
leader whose memory does not fit), with the classified log, rather than waiting out the timeout.
"""

from __future__ import annotations

from typing import Any

from vllm_remedy.kube.client import KubeClient
from vllm_remedy.kube.health import pod_health
from vllm_remedy.kube.lws_history import NAME_LABEL, REVISION_LABEL, update_hash
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


def _observed(lws: dict[str, Any]) -> bool:
    generation = int((lws.get("metadata") or {}).get("generation") or 0)
    conditions = (lws.get("status") or {}).get("conditions") or []
    return bool(conditions) and all(int(c.get("observedGeneration") or 0) >= generation for c in conditions)


def wait_for_lws_rollout(client: KubeClient, namespace: str, name: str, *, timeout: float = 900.0,
                         clock: Clock | None = None, interval: float = 2.0, restart_limit: int = 3,
                         fetch_log: bool = True) -> WaitResult:
    """Poll until every group is Ready on the current template, failing fast on a crash loop; clock seconds."""

    def look() -> Seen:
        lws, revisions, pods = read_set(client, namespace, name)
        spec, status = lws.get("spec") or {}, lws.get("status") or {}
        replicas = int(spec.get("replicas", 1) or 0)
        size = int((spec.get("leaderWorkerTemplate") or {}).get("size", 1) or 1)
        current = update_hash(lws, revisions)
        live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
        fresh = [p for p in live if current and (p["metadata"].get("labels") or {}).get(REVISION_LABEL) == current]
        ready, updated = int(status.get("readyReplicas") or 0), int(status.get("updatedReplicas") or 0)
        done = _observed(lws) and ready == updated == replicas and len(fresh) == len(live) == replicas * size and all(
            pod_health(p).ready for p in fresh)
        return Seen(f"{updated} of {replicas} groups updated, {ready} ready",
                    f"leaderworkerset {name}: {replicas} groups of {size} pods ready" if done else None, fresh)

    return poll_set(client, namespace, f'leaderworkerset "{name}"', look, timeout=timeout, clock=clock,
                    interval=interval, restart_limit=restart_limit, fetch_log=fetch_log)
