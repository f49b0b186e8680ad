"""The scheduler: GPU-aware filtering with kube-scheduler's messages, so stuck rollouts look real.

Filters run per node in kube-scheduler's order (unschedulable, taints, node affinity/selector,
resources) and the first failing one names the node's reason; the FailedScheduling message is the
sorted histogram of reasons ("0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 2 node(s)
didn't match Pod's node affinity/selector.") followed by the default preemption plugin's verdict, as
kube-scheduler 1.32 writes it (" preemption: 0/3 nodes are available: 1 No preemption victims found for
incoming pod, 2 Preemption is not helpful for scheduling."). A RollingUpdate whose surge pod needs a GPU that the
old pods hold therefore waits in Pending, exactly the deadlock the runbook warns about.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from vllm_remedy.sim.clock import Clock
from vllm_remedy.sim.controllers.events import EventRecorder
from vllm_remedy.sim.controllers.manager import Manager
from vllm_remedy.sim.controllers.resources import parse_quantity, pod_requests
from vllm_remedy.sim.controllers.util import expression_matches, pod_active
from vllm_remedy.sim.store import Store

Obj = dict[str, Any]

RETRY_SECONDS = 300.0  # kube-scheduler flushes unschedulable pods at least this often
_RESOURCE_ORDER = ("cpu", "memory", "ephemeral-storage")
NO_VICTIMS = "No preemption victims found for incoming pod"
NOT_HELPFUL = "Preemption is not helpful for scheduling"


def tolerates(tolerations: list[Obj], taint: Obj) -> bool:
    """Toleration matching as kube-scheduler applies it: an empty effect matches any effect, and
    ``Exists`` without a key tolerates every taint."""
    for tol in tolerations:
        if tol.get("effect") and tol["effect"] != taint.get("effect"):
            continue
        op = tol.get("operator", "Equal")
        if op == "Exists" and not tol.get("key"):
            return True
        if tol.get("key") != taint.get("key"):
            continue
        if op == "Exists" or str(tol.get("value", "")) == str(taint.get("value", "")):
            return True
    return False


def matches_node_selection(pod: Obj, node: Obj) -> bool:
    """nodeSelector and requiredDuringSchedulingIgnoredDuringExecution (terms ORed, expressions ANDed)."""
    labels = node.get("metadata", {}).get("labels") or {}
    spec = pod.get("spec") or {}
    for key, value in (spec.get("nodeSelector") or {}).items():
        if labels.get(key) != str(value):
            return False
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution"))
    if not required:
        return True
    fields = {"metadata.name": node["metadata"]["name"]}
    for term in required.get("nodeSelectorTerms") or []:
        exprs, field_exprs = term.get("matchExpressions") or [], term.get("matchFields") or []
        if not exprs and not field_exprs:
            continue
        if all(expression_matches(e, labels) for e in exprs) and all(
                expression_matches(e, fields) for e in field_exprs):
            return True
    return False


def node_reasons(pod: Obj, node: Obj, used: dict[str, float], pod_count: int) -> list[str]:
    """Why ``pod`` cannot run on ``node`` (empty when it fits)."""
    if node.get("spec", {}).get("unschedulable"):
        return ["node(s) were unschedulable"]
    tolerations = pod.get("spec", {}).get("tolerations") or []
    for taint in node.get("spec", {}).get("taints") or []:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not tolerates(tolerations, taint):
            return [f"node(s) had untolerated taint {{{taint.get('key', '')}: {taint.get('value', '')}}}"]
    if not matches_node_selection(pod, node):
        return ["node(s) didn't match Pod's node affinity/selector"]
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    reasons = []
    if "pods" in allocatable and pod_count + 1 > parse_quantity(allocatable["pods"]):
        reasons.append("Too many pods")
    wanted = pod_requests(pod)
    names = [n for n in _RESOURCE_ORDER if n in wanted] + sorted(n for n in wanted if n not in _RESOURCE_ORDER)
    for name in names:
        if wanted[name] <= 0:
            continue
        capacity = parse_quantity(allocatable[name]) if name in allocatable else 0.0
        if used.get(name, 0.0) + wanted[name] > capacity + 1e-9:
            reasons.append(f"Insufficient {name}")
    return reasons


def failure_message(total_nodes: int, reasons: list[str]) -> str:
    """FitError's text: "0/N nodes are available: " and the sorted "<count> <reason>" histogram."""
    histogram = Counter(reasons)
    parts = sorted(f"{count} {reason}" for reason, count in histogram.items())
    return f"0/{total_nodes} nodes are available: {', '.join(parts)}."


def preemption_might_help(reasons: list[str]) -> bool:
    """Only NodeResourcesFit failures are "Unschedulable" (resolvable by evicting pods); taints, node
    selection and cordons are "UnschedulableAndUnresolvable", which preemption skips."""
    return bool(reasons) and all(r.startswith("Insufficient ") or r == "Too many pods" for r in reasons)


def preemption_message(pod: Obj, total_nodes: int, per_node: list[list[str]]) -> str:
    """The default preemption plugin's PostFilter message for a pod no node fits.

    The simulated pods all share one priority, so a node preemption might help still has no victims.
    """
    if (pod.get("spec") or {}).get("preemptionPolicy") == "Never":
        return "preemption: not eligible due to preemptionPolicy=Never."
    verdicts = [NO_VICTIMS if preemption_might_help(reasons) else NOT_HELPFUL for reasons in per_node]
    return "preemption: " + failure_message(total_nodes, verdicts)


def unschedulable_message(pod: Obj, per_node: list[list[str]]) -> str:
    """The whole FailedScheduling / PodScheduled message: filter histogram, then preemption's verdict."""
    if not per_node:
        return "no nodes available to schedule pods"
    reasons = [reason for node_reasons in per_node for reason in node_reasons]
    return f"{failure_message(len(per_node), reasons)} {preemption_message(pod, len(per_node), per_node)}"


class Scheduler:
    """Binds pending pods to the least-loaded node that passes the filters, or records FailedScheduling
    and retries later, like kube-scheduler's unschedulable queue."""

    def __init__(self, store: Store, clock: Clock, manager: Manager, events: EventRecorder) -> None:
        self.store, self.clock, self.manager, self.events = store, clock, manager, events
        manager.register("schedule", self.schedule)
        manager.register("schedule-all", lambda _ns, _name: self.schedule_all())

    def on_pod(self, namespace: str, name: str, pod: Obj, kind: str) -> None:
        """Informer hook: unbound pods queue for scheduling; a bound pod deleted or finished frees resources,
        so every pending pod is retried."""
        if kind == "DELETED":
            if pod.get("spec", {}).get("nodeName"):
                self.manager.enqueue("schedule-all", "", "")
        elif not pod.get("spec", {}).get("nodeName") and pod_active(pod):
            self.manager.enqueue("schedule", namespace, name)
        elif kind == "MODIFIED" and (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            self.manager.enqueue("schedule-all", "", "")  # a finished pod frees its GPU (a Terminating one not yet)

    def on_node(self) -> None:
        """A node appeared or changed (capacity, taints, cordon): every pending pod gets another try."""
        self.manager.enqueue("schedule-all", "", "")

    def schedule_all(self) -> None:
        """Retry every pending pod, as kube-scheduler flushes its unschedulable queue on cluster changes."""
        pending = self.store.list("pods", None, lambda p: not p.get("spec", {}).get("nodeName") and pod_active(p))[0]
        for pod in pending:
            self.schedule(pod["metadata"]["namespace"], pod["metadata"]["name"], pod)

    def schedule(self, namespace: str, name: str, pod: Obj | None = None) -> None:
        """Filter every node against usage of bound unfinished pods, bind to the least-loaded fit, or mark the pod
        Unschedulable; pods naming another schedulerName are left to that scheduler."""
        pod = pod or self.store.find("pods", namespace, name)
        if pod is None or pod.get("spec", {}).get("nodeName") or not pod_active(pod):
            return
        scheduler_name = pod.get("spec", {}).get("schedulerName", "default-scheduler")
        if scheduler_name != "default-scheduler":
            return
        nodes = self.store.list("nodes")[0]
        usage: dict[str, dict[str, float]] = {}
        counts: Counter[str] = Counter()
        for other in self.store.list("pods", None, lambda p: bool(p.get("spec", {}).get("nodeName")))[0]:
            if (other.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                continue  # a Terminating pod still holds its node's GPUs until it is gone
            node_name = other["spec"]["nodeName"]
            counts[node_name] += 1
            bucket = usage.setdefault(node_name, {})
            for res, qty in pod_requests(other).items():
                bucket[res] = bucket.get(res, 0.0) + qty
        fits, per_node = [], []
        for node in nodes:
            node_name = node["metadata"]["name"]
            why = node_reasons(pod, node, usage.get(node_name, {}), counts[node_name])
            if why:
                per_node.append(why)
            else:
                fits.append(node)
        if fits:
            best = min(fits, key=lambda n: (self._load(n, usage), n["metadata"]["name"]))
            self._bind(pod, best)
        else:
            self._unschedulable(pod, unschedulable_message(pod, per_node))

    def _load(self, node: Obj, usage: dict[str, dict[str, float]]) -> float:
        """Least-allocated scoring on GPUs, then CPU: spread GPU pods over free cards."""
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        used = usage.get(node["metadata"]["name"], {})
        score = 0.0
        for res in ("nvidia.com/gpu", "cpu"):
            cap = parse_quantity(allocatable.get(res, 0)) if res in allocatable else 0.0
            if cap:
                score += used.get(res, 0.0) / cap
        return score

    def _bind(self, pod: Obj, node: Obj) -> None:
        ns, name, node_name = pod["metadata"]["namespace"], pod["metadata"]["name"], node["metadata"]["name"]
        self.store.mutate("pods", ns, name, lambda obj: obj["spec"].__setitem__("nodeName", node_name))
        now = self.clock.timestamp()

        def scheduled(obj: Obj) -> None:
            status = obj.setdefault("status", {})
            conds = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
            status["conditions"] = [*conds, {"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                                             "lastTransitionTime": now}]

        self.store.mutate("pods", ns, name, scheduled, status=True)
        self.events.record(pod, "Normal", "Scheduled", f"Successfully assigned {ns}/{name} to {node_name}",
                           "default-scheduler")

    def _unschedulable(self, pod: Obj, message: str) -> None:
        ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        now = self.clock.timestamp()

        def pending(obj: Obj) -> None:
            status = obj.setdefault("status", {})
            status["phase"] = "Pending"
            conds = status.get("conditions") or []
            old = next((c for c in conds if c.get("type") == "PodScheduled"), None)
            since = old["lastTransitionTime"] if old and old.get("status") == "False" else now
            status["conditions"] = [c for c in conds if c.get("type") != "PodScheduled"] + [{
                "type": "PodScheduled", "status": "False", "lastProbeTime": None, "lastTransitionTime": since,
                "reason": "Unschedulable", "message": message}]

        self.store.mutate("pods", ns, name, pending, status=True)
        self.events.record(pod, "Warning", "FailedScheduling", message, "default-scheduler")
        self.manager.requeue_after(RETRY_SECONDS, "schedule", ns, name)
