"""Which inventory host and which deploy answer an alert (pure; the pod → Deployment lookup is passed in).

Never guessed: an alert is acted on only when its labels name exactly one inventory host — by ``namespace`` and
``deployment``, or ``pod`` resolved through its owners (ReplicaSet → Deployment) on the cluster. A ``cluster``
label, when present, must equal the host's ``<cluster>``; without it, the same Deployment in two clusters of the
inventory is ambiguous and ignored.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .webhook import Alert

#: Alert (as `vllm-remedy alerts` renders it) → the deploy that answers it: the runbook's step 1 for a crash loop
#: or an OOM restart (restore also sheds load when the OOM came under load with nothing deployed), step 5 for the
#: KV cache filling up under load. Drift, overdue toggles and a stale check page people, not this responder.
ACTIONS: Mapping[str, str] = {
    "VllmCudaOomRestart": "restore",
    "VllmContainerOOMKilled": "restore",
    "VllmCrashLoopBackOff": "restore",
    "VllmKvCacheUsageHigh": "load_guard",
    "VllmPreemptionsRising": "load_guard",
}

#: Every alert `vllm-remedy alerts` renders (alerts/rules.py): the only values /metrics labels alertname with.
RENDERED = frozenset(ACTIONS) | {"VllmRemedyDriftDetected", "VllmRemedyOverridePastExpiry",
                                 "VllmRemedyDriftCheckStale"}


@dataclass(frozen=True)
class InventoryHost:
    """One host of the inventory as pyinfra expanded it (``@k8s/<cluster>/<namespace>/<deployment>``)."""

    name: str
    cluster: str
    namespace: str
    deployment: str
    data: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Route:
    """Where an alert goes: a host and a deploy, or why it goes nowhere (``reason``)."""

    host: InventoryHost | None
    deploy: str | None
    reason: str


#: (a host of the cluster to ask through, namespace, pod) → the pod's Deployment, or None (not found / no owner).
OwnerLookup = Callable[[InventoryHost, str, str], "str | None"]


def route(alert: Alert, hosts: Sequence[InventoryHost], owner: OwnerLookup) -> Route:
    """The one host and deploy for ``alert``, or a Route with ``host`` None saying why it is ignored."""
    name = alert.name
    deploy = ACTIONS.get(name)
    if deploy is None:
        return Route(None, None, f"alert {name}: no deploy answers it (responds to {', '.join(sorted(ACTIONS))})")
    labels = alert.labels
    namespace = labels.get("namespace")
    if not namespace:
        return Route(None, deploy, f"alert {name}: no namespace label")
    cluster = labels.get("cluster")
    near = [h for h in hosts if h.namespace == namespace and (cluster is None or h.cluster == cluster)]
    where = f"{cluster}/{namespace}" if cluster else namespace
    if labels.get("deployment"):
        found = {(h.cluster, labels["deployment"]) for h in near}
    elif labels.get("pod"):
        by_cluster = {h.cluster: h for h in near}
        found = set()
        for c, via in sorted(by_cluster.items()):
            owner_name = owner(via, namespace, labels["pod"])
            if owner_name:
                found.add((c, owner_name))
    else:
        return Route(None, deploy, f"alert {name}: neither a deployment nor a pod label in namespace {namespace}")
    chosen = [h for h in near if (h.cluster, h.deployment) in found]
    what = labels.get("deployment") or f"pod {labels.get('pod')}"
    if not chosen:
        return Route(None, deploy, f"alert {name}: {where}/{what} names no inventory host")
    if len(chosen) > 1:
        names = ", ".join(h.name for h in chosen)
        return Route(None, deploy, f"alert {name}: {where}/{what} matches {len(chosen)} hosts ({names}); "
                     "a cluster label must say which")
    return Route(chosen[0], deploy, f"alert {name}: {chosen[0].name} → deploys/{deploy}.py")
