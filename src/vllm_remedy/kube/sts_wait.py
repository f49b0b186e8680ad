"""A StatefulSet rollout wait with ``kubectl rollout status sts/…`` semantics that fails fast.

Like the Deployment wait (:mod:`.wait`), it stops as soon as a pod of the update revision crash-loops, with
the classified log. It also stops when the set cannot move at all: a pod left on another revision that the
controller will never replace by itself — any such pod under OnDelete, or one that is not Running and
Ready under OrderedReady — and names the pods to delete, since waiting longer changes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from vllm_remedy.errors import UserError
from vllm_remedy.kube.annotations import template_digest
from vllm_remedy.kube.client import KubeClient
from vllm_remedy.kube.health import pod_health
from vllm_remedy.kube.selectors import selector_string
from vllm_remedy.kube.serving import ServingGate
from vllm_remedy.kube.set_wait import BLOCKED, Seen, poll_set
from vllm_remedy.kube.sts_history import REVISION_LABEL, pods_blocking_rollback, rollout_status
from vllm_remedy.kube.wait import Clock, WaitResult, crashing_container

__all__ = ["BLOCKED", "NOT_OURS", "blocked_message", "deletion_order", "foreign_update", "next_deletions", "pod_names",
           "read_set", "rows_rolled_out", "stuck_after", "stuck_pods", "wait_for_replacements", "wait_for_sts_rollout"]


def read_set(client: KubeClient, namespace: str, name: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(the StatefulSet, the pods its selector matches), read now."""
    sts = client.request("GET", client.object_path(namespace, "statefulsets", name))
    selector = selector_string((sts.get("spec") or {}).get("selector"))
    return sts, client.list_pods(namespace, selector)


#: Why pods the controller will not move stay on their revision when the set's template is not our write.
NOT_OURS = "the update revision is not ours: a change nobody reviewed here; delete them yourself after reviewing it"


def foreign_update(sts: Mapping[str, Any], template_key: str) -> bool:
    """Whether the set's template is not the one our last write recorded (``template_key``: the
    ``last-action-template`` annotation, set by this run's write or an earlier run's), pure. Deleting a pod the
    controller will not move by itself (any under OnDelete, a crash-looping one under OrderedReady) then rolls it onto
    a change nobody reviewed here (a colleague's ``kubectl patch``, judged good or not): the controller would never
    move it, so nothing of ours may. A rerun after our own write (kill -9) still finds its digest there and finishes."""
    notes = (sts.get("metadata") or {}).get("annotations") or {}
    return notes.get(template_key) != template_digest((sts.get("spec") or {}).get("template"))


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


def held_by_partition(sts: Mapping[str, Any], pods: Sequence[Mapping[str, Any]], restart_limit: int = 3) -> list[str]:
    """Crash-looping pods below a RollingUpdate ``partition`` (pure): no rollback reaches them — the controller
    updates only ordinals at or above it, and recreates a deleted pod below it at the set's current revision (the
    StatefulSet docs' partitioned rolling update) — so they crash-loop until someone lowers the partition."""
    first, floor = first_ordinal(sts), partition_floor(sts)
    names = [str((p.get("metadata") or {}).get("name")) for p in pods
             if crashing_container(pod_health(dict(p)), restart_limit)]
    return sorted((n for n in names if first <= ordinal(n) < floor), key=ordinal)


def stuck_after(sts: Mapping[str, Any], pods: Sequence[Mapping[str, Any]], off: Sequence[str],
                restart_limit: int = 3) -> list[str]:
    """Pods :func:`stuck_pods` will find once a write moves the set's update revision off the pods ``off`` run, as
    the plan reads them now (pure): under OnDelete every one of them; under OrderedReady those crash-looping or
    unschedulable; under Parallel none — so ``--dry`` fails where ``-y``'s wait will stop, and names the same pods."""
    spec = sts.get("spec") or {}
    if (spec.get("updateStrategy") or {}).get("type") == "OnDelete":
        return list(off)
    if spec.get("podManagementPolicy", "OrderedReady") != "OrderedReady":
        return []
    by_name = {str((p.get("metadata") or {}).get("name")): p for p in pods}
    return [n for n in off if n in by_name and (crashing_container(pod_health(dict(by_name[n])), restart_limit)
                                                or pod_health(dict(by_name[n])).unschedulable)]


def blocked_message(sts: dict[str, Any], pods: list[str]) -> str:
    """Why the set will not reach its update revision on its own, and what would make it."""
    spec = sts.get("spec") or {}
    why = ("updateStrategy OnDelete replaces a pod only when it is deleted"
           if (spec.get("updateStrategy") or {}).get("type") == "OnDelete"
           else "podManagementPolicy OrderedReady does not move past a pod that is not Running and Ready")
    return f"statefulset {sts['metadata']['name']}: {why}: delete pod {', '.join(pods)} for the change to take effect"


def wait_for_sts_rollout(client: KubeClient, namespace: str, name: str, *, timeout: float = 900.0,
                         clock: Clock | None = None, interval: float = 2.0, restart_limit: int = 3,
                         fetch_log: bool = True, unschedulable_grace: float | None = 60.0,
                         gate: ServingGate | None = None) -> WaitResult:
    """Poll until rolled out, failing fast on a crash loop, a pod of the update revision Unschedulable for
    ``unschedulable_grace`` seconds, or a set that cannot move; clock seconds throughout. With a ``gate``, a
    probe-less vLLM pod must also show it serves (``kube.serving``)."""

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
        partition = partition_of(sts)
        done = not blocking and observed and len(fresh) >= replicas - partition and all(
            pod_health(p).ready for p in fresh) and (finished or on_delete)
        return Seen(text, (text.strip() or f"statefulset {name}: {replicas} pods at {update}") if done else None,
                    fresh if observed else [],  # before the controller saw the write, "fresh" is the old revision
                    blocked_message(sts, blocking) if blocking else None)

    return poll_set(client, namespace, f'statefulset "{name}"', look, timeout=timeout, clock=clock,
                    interval=interval, restart_limit=restart_limit, fetch_log=fetch_log,
                    unschedulable_grace=unschedulable_grace, gate=gate)


def ordinal(name: str) -> int:
    """A set's pod's ordinal from its name (``llama-sts-1`` → 1; -1 when the name carries none)."""
    tail = name.rpartition("-")[2]
    return int(tail) if tail.isdigit() else -1


def partition_of(sts: Mapping[str, Any]) -> int:
    """The RollingUpdate ``partition`` (0 when unset, and under OnDelete, which has none): pods with a lower ordinal
    keep their revision."""
    strategy = (sts.get("spec") or {}).get("updateStrategy") or {}
    if strategy.get("type") == "OnDelete":
        return 0
    return int((strategy.get("rollingUpdate") or {}).get("partition") or 0)


def first_ordinal(sts: Mapping[str, Any]) -> int:
    """``spec.ordinals.start``: the ordinal of the set's first pod (0 when unset)."""
    return int(((sts.get("spec") or {}).get("ordinals") or {}).get("start") or 0)


def partition_floor(sts: Mapping[str, Any]) -> int:
    """The lowest ordinal a RollingUpdate replaces: the controller counts the partition from ``spec.ordinals.start``
    (upstream's newVersionedStatefulSetPod), so pods below ``start + partition`` keep their revision."""
    partition = partition_of(sts)
    return first_ordinal(sts) + partition if partition else 0


def _settled(sts: dict[str, Any], pods: list[dict[str, Any]], stuck: list[str]) -> bool:
    """Every pod but ``stuck`` runs the update revision and is Ready, none is going away, none is missing."""
    update = str((sts.get("status") or {}).get("updateRevision") or "")
    replicas = int((sts.get("spec") or {}).get("replicas", 1) or 0)
    if any(p["metadata"].get("deletionTimestamp") for p in pods) or len(pods) < replicas:
        return False
    return all((p["metadata"].get("labels") or {}).get(REVISION_LABEL) == update and pod_health(p).ready
               for p in pods if p["metadata"]["name"] not in stuck)


def next_deletions(sts: dict[str, Any], pods: list[dict[str, Any]], restart_limit: int = 3) -> list[str]:
    """The pods to delete now to move the set on, highest ordinal first (pure): every stuck pod that is not Ready or
    crash-loops (it serves nothing); else one Ready pod of another revision — the highest ordinal, as a RollingUpdate
    would take it — and only once every other pod is Ready on the update revision; else none (wait for them)."""
    stuck = sorted(stuck_pods(sts, pods, restart_limit), key=ordinal, reverse=True)
    by_name = {p["metadata"]["name"]: p for p in pods}
    # a crash-looping container without a readiness probe is Ready between its crashes: it serves nothing either
    idle = [n for n in stuck if not pod_health(by_name[n]).ready
            or crashing_container(pod_health(by_name[n]), restart_limit)]
    if idle:
        return idle
    return stuck[:1] if stuck and _settled(sts, pods, stuck) else []


def wait_for_replacements(client: KubeClient, namespace: str, name: str, *, timeout: float,
                          clock: Clock | None = None, interval: float = 2.0, restart_limit: int = 3,
                          fetch_log: bool = True, unschedulable_grace: float | None = 60.0,
                          gate: ServingGate | None = None) -> WaitResult:
    """Poll until every pod but those still to be deleted runs the update revision and is Ready (the replacement of
    a pod we deleted serves), failing fast as :func:`wait_for_sts_rollout` does on a crash loop or Unschedulable."""

    def look() -> Seen:
        sts, pods = read_set(client, namespace, name)
        update = str((sts.get("status") or {}).get("updateRevision") or "")
        live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
        fresh = [p for p in live if (p["metadata"].get("labels") or {}).get(REVISION_LABEL) == update]
        ready = sum(1 for p in fresh if pod_health(p).ready)
        text = f"statefulset {name}: {ready} of {len(fresh)} pods Ready at {update}\n"
        done = _settled(sts, pods, stuck_pods(sts, pods, restart_limit))
        return Seen(text, text.strip() if done else None, fresh)

    return poll_set(client, namespace, f'statefulset "{name}"', look, timeout=timeout, clock=clock,
                    interval=interval, restart_limit=restart_limit, fetch_log=fetch_log,
                    unschedulable_grace=unschedulable_grace, gate=gate)


def rows_rolled_out(sts: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> bool:
    """Every pod on the update revision and Ready (under a partition: every pod at or above it), pure; ``rows`` are
    the Pods fact's rows of the set (``new``: made from the update revision). Under OnDelete the set's status says
    nothing, so the rows are counted: a pod deleted and not yet recreated (a run killed right after deleting it)
    is a rollout under way, not a finished one."""
    if ((sts.get("spec") or {}).get("updateStrategy") or {}).get("type") == "OnDelete":
        status = sts.get("status") or {}
        observed = int(status.get("observedGeneration") or 0) >= int((sts.get("metadata") or {}).get("generation")
                                                                       or 0)
        live = [p for p in rows if not p.get("deleting")]
        replicas = int((sts.get("spec") or {}).get("replicas", 1) or 0)
        return observed and len(live) >= replicas and len(live) == len(rows) and all(
            p.get("new") and p.get("ready") for p in live)
    try:
        done = rollout_status(dict(sts))[1]
    except UserError:
        return False
    # the status may lag the pods (a rerun right after a pod was deleted): the rows must agree
    partition, floor = partition_of(sts), partition_floor(sts)
    reached = [p for p in rows if ordinal(str(p.get("name") or "")) >= floor]
    replicas = int((sts.get("spec") or {}).get("replicas", 1) or 0)
    return done and len(reached) >= replicas - partition and all(
        p.get("new") and p.get("ready") and not p.get("deleting") for p in reached)


def pod_names(sts: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]) -> list[str]:
    """The set's pods by ordinal (pure): those read, a pod being deleted included, and those its replicas make
    (``name-N`` from ``spec.ordinals.start``) — so a line naming them is the same before the write and after it,
    while the controller replaces a pod (``--dry`` and ``-y`` say the same)."""
    spec = sts.get("spec") or {}
    name = str((sts.get("metadata") or {}).get("name") or "")
    first = first_ordinal(sts)
    made = {f"{name}-{i}" for i in range(first, first + int(spec.get("replicas", 1) or 0))} if name else set()
    return sorted(made | {str(p["metadata"]["name"]) for p in pods}, key=ordinal)


def deletion_order(pods: Sequence[Mapping[str, Any]], names: Sequence[str]) -> str:
    """How the wait will delete ``names`` under OnDelete (pure): the line an operator approves."""
    by_name = {str(p["metadata"]["name"]): p for p in pods}
    idle = [n for n in sorted(names, key=ordinal, reverse=True) if n in by_name and not pod_health(by_name[n]).ready]
    serving = [n for n in sorted(names, key=ordinal, reverse=True) if n not in idle]
    first = f"first {', '.join(idle)} (not Ready: they serve nothing); then " if idle else ""
    return (f"then: the deletions: {first}the Ready pods one at a time, highest ordinal first "
            f"({', '.join(serving) or 'none'}), each once every other pod is Ready on the new revision; a replacement "
            "that crash-loops stops the run, and so does an edit of the template after this run's")
