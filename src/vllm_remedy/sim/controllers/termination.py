"""Graceful pod deletion, as the API server and kubelet split it between them.

A DELETE of a running pod does not remove it: the API server stamps ``deletionTimestamp`` (now + the
grace period) and the pod shows ``Terminating`` while its kubelet stops the containers; only then is
the object removed. Until that moment the pod still holds its GPU, which is what makes a rollout on
full GPU nodes wait for the old pod to go. Pods never bound to a node, or already finished, go at once,
as does ``--grace-period=0`` (kubectl's ``--force``).
"""

from __future__ import annotations

from typing import Any

from vllm_remedy.sim.clock import Clock
from vllm_remedy.sim.store import ApiError, Store

Obj = dict[str, Any]

#: Kubernetes' default ``terminationGracePeriodSeconds``.
DEFAULT_GRACE_SECONDS = 30
#: How long vLLM takes to stop on SIGTERM (engine shutdown, CUDA context freed): well inside the grace.
STOP_SECONDS = 3.0
#: Pod annotation (test and game-day hook): seconds the containers take to stop, e.g. draining requests.
STOP_AFTER = "sim.vllm-remedy.io/stop-after"


def stop_seconds(pod: Obj) -> float:
    """When the kubelet removes a Terminating pod: its containers' stop time, cut short by the grace period."""
    meta = pod.get("metadata") or {}
    grace = float(meta.get("deletionGracePeriodSeconds") or 0)
    try:
        wanted = float((meta.get("annotations") or {}).get(STOP_AFTER, STOP_SECONDS))
    except ValueError:
        wanted = STOP_SECONDS
    return max(0.0, min(wanted, grace))


def grace_seconds(pod: Obj, requested: int | None) -> int:
    """The grace period a DELETE gets: the request's, else the pod's own, else 30 s; 0 when it cannot run."""
    phase = (pod.get("status") or {}).get("phase")
    if not (pod.get("spec") or {}).get("nodeName") or phase in ("Succeeded", "Failed"):
        return 0
    if requested is not None:
        return max(0, requested)
    own = (pod.get("spec") or {}).get("terminationGracePeriodSeconds")
    return DEFAULT_GRACE_SECONDS if own is None else max(0, int(own))


def delete_pod(store: Store, clock: Clock, namespace: str, name: str, grace: int | None = None,
               *, dry_run: bool = False) -> Obj:
    """DELETE a pod: remove it now when its grace is 0, else mark it Terminating for its kubelet to finish."""
    pod = store.get("pods", namespace, name)
    seconds = grace_seconds(pod, grace)
    if dry_run:
        return pod
    if seconds == 0:
        return store.delete("pods", namespace, name)
    return store.mark_deleting("pods", namespace, name, clock.timestamp(clock.now() + seconds), seconds)


def parse_grace(value: Any, where: str) -> int | None:
    """``gracePeriodSeconds`` from a query string or DeleteOptions body; None when not given."""
    if value is None or value == "":
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ApiError(400, "BadRequest", f"{where}: gracePeriodSeconds must be an integer, got {value!r}") from None
