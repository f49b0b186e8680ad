"""The ReplicaSet controller: keep ``spec.replicas`` pods alive and report how many are ready.

Pods are named ``<rs>-<5 chars>`` and deleted in kube's order (unscheduled, pending, not ready,
most restarts, newest first), so scaling an RS down during a broken rollout removes the crash-looping
pods before the healthy ones, as on a real cluster.
"""

from __future__ import annotations

import contextlib
import copy
from typing import Any

from vllm_remedy.sim.clock import Clock, parse_timestamp
from vllm_remedy.sim.controllers.defaults import default_pod
from vllm_remedy.sim.controllers.events import EventRecorder
from vllm_remedy.sim.controllers.hashing import random_suffix
from vllm_remedy.sim.controllers.manager import Manager
from vllm_remedy.sim.controllers.termination import delete_pod
from vllm_remedy.sim.controllers.util import (
    condition,
    controlled_by,
    controller_ref,
    owner_ref,
    pod_active,
    pod_available,
    pod_ready,
)
from vllm_remedy.sim.store import ApiError, Store

Obj = dict[str, Any]
RS = "replicasets.apps"
_PHASE_RANK = {"Pending": 0, "Unknown": 1, "Running": 2}


class ReplicaSetController:
    """Keeps each ReplicaSet at ``spec.replicas`` pods and writes the ready/available counts that the
    Deployment controller's rollout arithmetic reads."""

    def __init__(self, store: Store, clock: Clock, manager: Manager, events: EventRecorder) -> None:
        self.store, self.clock, self.manager, self.events = store, clock, manager, events
        manager.register("replicaset", self.sync)
        manager.register("replicaset-gc", self._collect)

    def on_replicaset(self, namespace: str, name: str, obj: Obj, kind: str) -> None:
        """Informer hook: a change queues a sync; a deletion queues cascading GC of its pods by uid."""
        if kind == "DELETED":
            self.manager.enqueue("replicaset-gc", namespace, obj["metadata"].get("uid", ""))
        else:
            self.manager.enqueue("replicaset", namespace, name)

    def on_pod(self, namespace: str, pod: Obj, kind: str) -> None:
        """Informer hook: any change to an owned pod re-syncs the owner, since readiness feeds its status."""
        ref = controller_ref(pod)
        if ref is not None and ref.get("kind") == "ReplicaSet":
            self.manager.enqueue("replicaset", namespace, ref["name"])

    def _collect(self, namespace: str, uid: str) -> None:
        for pod in self.store.list("pods", namespace, lambda o: controlled_by(o, uid))[0]:
            with contextlib.suppress(ApiError):
                delete_pod(self.store, self.clock, namespace, pod["metadata"]["name"])

    def sync(self, namespace: str, name: str) -> None:
        """syncReplicaSet: create missing pods or delete the surplus in kube's deletion order, then write status."""
        rs = self.store.find(RS, namespace, name)
        if rs is None or rs["metadata"].get("deletionTimestamp"):
            return
        uid = rs["metadata"]["uid"]
        pods = [p for p in self.store.list("pods", namespace, lambda o: controlled_by(o, uid))[0] if pod_active(p)]
        want = int(rs["spec"].get("replicas", 1) or 0)
        if len(pods) < want:
            for _ in range(want - len(pods)):
                made = self._create_pod(rs)
                if made is not None:
                    pods.append(made)
        elif len(pods) > want:
            doomed = sorted(pods, key=self._deletion_rank)[: len(pods) - want]
            for pod in doomed:
                try:
                    delete_pod(self.store, self.clock, namespace, pod["metadata"]["name"])
                except ApiError:
                    continue
                self.events.record(rs, "Normal", "SuccessfulDelete", f"Deleted pod: {pod['metadata']['name']}",
                                   "replicaset-controller")
            pods = [p for p in pods if p not in doomed]
        self._update_status(rs, pods)

    def _deletion_rank(self, pod: Obj) -> tuple[Any, ...]:
        status = pod.get("status") or {}
        ready = pod_ready(pod)
        since = (condition(status, "Ready") or {}).get("lastTransitionTime", "")
        restarts = sum(int(c.get("restartCount", 0)) for c in status.get("containerStatuses") or [])
        created = parse_timestamp(pod["metadata"].get("creationTimestamp", "1970-01-01T00:00:00Z"))
        return (
            bool(pod.get("spec", {}).get("nodeName")), _PHASE_RANK.get(status.get("phase", "Pending"), 0),
            ready, (-parse_timestamp(since) if ready and since else 0), -restarts, -created,
        )

    def _create_pod(self, rs: Obj) -> Obj | None:
        template = copy.deepcopy(rs["spec"].get("template") or {})
        tmeta = template.get("metadata") or {}
        base = rs["metadata"]["name"]
        pod: Obj = {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {
                "generateName": f"{base}-", "namespace": rs["metadata"]["namespace"],
                "labels": dict(tmeta.get("labels") or {}), "ownerReferences": [owner_ref(rs)],
            },
            "spec": template.get("spec") or {},
            "status": {"phase": "Pending"},
        }
        if tmeta.get("annotations"):
            pod["metadata"]["annotations"] = dict(tmeta["annotations"])
        default_pod(pod)
        pod["status"]["qosClass"] = qos_class(pod)
        for _ in range(5):
            pod["metadata"]["name"] = f"{base}-{random_suffix()}"
            try:
                made = self.store.create("pods", pod)
            except ApiError as err:
                if err.code == 409:
                    continue
                raise
            self.events.record(rs, "Normal", "SuccessfulCreate", f"Created pod: {made['metadata']['name']}",
                               "replicaset-controller")
            return made
        return None

    def _update_status(self, rs: Obj, pods: list[Obj]) -> None:
        now = self.clock.now()
        min_ready = int(rs["spec"].get("minReadySeconds", 0) or 0)
        tlabels = ((rs["spec"].get("template") or {}).get("metadata") or {}).get("labels") or {}
        labelled = sum(1 for p in pods if all((p["metadata"].get("labels") or {}).get(k) == v
                                              for k, v in tlabels.items()))
        ready = [p for p in pods if pod_ready(p)]
        available = sum(1 for p in ready if pod_available(p, min_ready, now))
        if min_ready and available < len(ready):  # re-check when the next pod crosses minReadySeconds
            self.manager.requeue_after(min_ready, "replicaset", rs["metadata"]["namespace"], rs["metadata"]["name"])
        status: Obj = {"replicas": len(pods)}
        for key, value in (("fullyLabeledReplicas", labelled), ("readyReplicas", len(ready)),
                           ("availableReplicas", available)):
            if value:
                status[key] = value
        status["observedGeneration"] = rs["metadata"].get("generation", 1)
        if status != rs.get("status"):
            self.store.mutate(RS, rs["metadata"]["namespace"], rs["metadata"]["name"],
                              lambda obj: obj.__setitem__("status", status), status=True)


def qos_class(pod: Obj) -> str:
    """Guaranteed (cpu+memory limits == requests everywhere), BestEffort (nothing set), else Burstable."""
    containers = pod.get("spec", {}).get("containers") or []
    any_set, guaranteed = False, True
    for c in containers:
        res = c.get("resources") or {}
        req, lim = res.get("requests") or {}, res.get("limits") or {}
        if req or lim:
            any_set = True
        for key in ("cpu", "memory"):
            if key not in lim or str(req.get(key, lim.get(key))) != str(lim[key]):
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed and containers else "Burstable"
