"""Times that are shown as of the moment they are read: kubelet heartbeats.

Heartbeats: node Leases' ``renewTime`` and node conditions' ``lastHeartbeatTime``.
A kubelet renews its Lease every 10 s and re-posts node status at least every 5 minutes. Writing that
would cost a write per node every few real seconds at the rehearsal cluster's speeds (and fill the
write-ahead log); instead a served Node or Lease carries the latest beat due at or before the cluster's
``now``, so heartbeats advance with the simulated clock at no cost. A node whose Ready condition is
``Unknown`` (its kubelet stopped posting) keeps its stored times.

Events and every other time reach kubectl on its wall clock through ``reader_clock``.
Pure: objects in, objects out.
"""

from __future__ import annotations

import copy
import math
from datetime import datetime, timezone
from typing import Any

from vllm_remedy.sim.clock import parse_timestamp

Obj = dict[str, Any]
LEASE_RENEW_SECONDS = 10.0  # kubelet: nodeLeaseDurationSeconds 40 × renewIntervalFraction 0.25
NODE_STATUS_SECONDS = 300.0  # kubelet: nodeStatusReportFrequency
LEASES = "leases.coordination.k8s.io"


def _beat(now: float, period: float, since: str | None) -> float:
    beat = math.floor(now / period) * period
    try:
        return max(beat, parse_timestamp(since)) if since else beat
    except ValueError:
        return beat


def _stamp(at: float, micro: bool = False) -> str:
    moment = datetime.fromtimestamp(at, tz=timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ" if micro else "%Y-%m-%dT%H:%M:%SZ")


def fresh(resource: str, obj: Obj, now: float) -> Obj:
    """``obj`` with its heartbeat times as of ``now`` (a copy when changed: watch events share their object)."""
    if resource == "nodes":
        obj = copy.deepcopy(obj)
        conditions = (obj.get("status") or {}).get("conditions") or []
        if any(c.get("type") == "Ready" and c.get("status") == "Unknown" for c in conditions):
            return obj
        for condition in conditions:
            condition["lastHeartbeatTime"] = _stamp(_beat(now, NODE_STATUS_SECONDS,
                                                          condition.get("lastTransitionTime")))
    elif resource == LEASES and obj.get("metadata", {}).get("namespace") == "kube-node-lease":
        obj = copy.deepcopy(obj)
        spec = obj.setdefault("spec", {})
        spec["renewTime"] = _stamp(_beat(now, LEASE_RENEW_SECONDS, spec.get("acquireTime")), micro=True)
    return obj
