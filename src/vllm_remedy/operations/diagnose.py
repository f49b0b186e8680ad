"""Runbook steps 2–3 as a pyinfra operation that only reads: the report is printed once per host.

Why an operation that never yields: the deploy stays "one step, one file, one operation" like the
others, and the report appears in ``--dry``, prompted and ``-y`` runs alike, exactly once per host.
Every kind gets the same report (``remedies.diagnose``): what varies is where its revisions, templates and
pods are read — a Deployment's ReplicaSets, or a StatefulSet's or LeaderWorkerSet's ControllerRevisions
(``operations.set_reads``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from pyinfra import host, state
from pyinfra.api import FunctionCommand, operation

from vllm_remedy.facts.gpu_memory import GpuMemory
from vllm_remedy.facts.history import RolloutHistory
from vllm_remedy.facts.nodes import GpuNodes
from vllm_remedy.facts.pods import Pods
from vllm_remedy.kube import lws_history
from vllm_remedy.kube.annotations import scan_toggles
from vllm_remedy.kube.diff import describe, revision_diff
from vllm_remedy.kube.errors import KubeError
from vllm_remedy.kube.kinds import DEPLOYMENT, STATEFULSET
from vllm_remedy.kube.printable import escaped
from vllm_remedy.operations import set_reads
from vllm_remedy.operations.util import K8sHost, deployment_object, k8s_host, show
from vllm_remedy.remedies.diagnose import compared_revisions, crashed_containers, diagnose_lines, toggle_lines

#: Log lines read per crashed container: a whole vLLM start, like the Pods fact reads.
LOG_TAIL = 3000


@dataclass(frozen=True)
class Inputs:
    """What the report reads, in the Deployment's shapes whatever the kind. ``container`` narrows which containers'
    logs are read (None: every container, as for an LWS, whose workers are not the leader's container);
    ``groups`` are lines a kind adds under step 2's headline (an LWS's groups), ``extra`` after step 3's diff (its
    worker template)."""

    history: Mapping[str, Any]
    pods: Mapping[str, Any]
    memory: Mapping[str, Any] | None
    container: str | None
    groups: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)


def _deployment_inputs(ctx: K8sHost) -> Inputs | None:
    history = host.get_fact(RolloutHistory)
    pods = host.get_fact(Pods)
    if history is None or pods is None:
        return None
    return Inputs(history, pods, host.get_fact(GpuMemory), ctx.container)


def _set_inputs(ctx: K8sHost) -> Inputs | None:
    facts = host.get_fact(set_reads.state_fact(ctx.kind))
    if facts is None:
        return None
    history, pods = facts["rollout"], set_reads.with_totals(facts["pod_rows"])
    memory = host.get_fact(GpuMemory)  # the verb reads the DCGM exporters by the set's own selector
    if ctx.kind != set_reads.LEADERWORKERSET:
        return Inputs(history, pods, memory, ctx.container)
    return Inputs(history, pods, memory, None, group_lines(facts), worker_lines(facts, history, pods, ctx))


def group_lines(facts: Mapping[str, Any]) -> list[str]:
    """Which pod of each LWS group is the leader: the group is one engine, a worker's death is the group's."""
    groups: dict[str, list[str]] = {}
    for pod in facts.get("pods") or []:
        labels = (pod.get("metadata") or {}).get("labels") or {}
        role = "leader" if labels.get(lws_history.WORKER_LABEL, "0") == "0" else "worker"
        groups.setdefault(str(labels.get(lws_history.GROUP_LABEL, "?")), []).append(
            f"{pod['metadata']['name']} ({role})")
    return [f"  group {group}: {', '.join(sorted(names))}" for group, names in sorted(groups.items())]


def worker_lines(facts: Mapping[str, Any], history: Mapping[str, Any], pods: Mapping[str, Any], ctx: K8sHost
                 ) -> list[str]:
    """An LWS's worker template between the same two revisions step 3 compares (its rows carry the leader's)."""
    before, after, _, _ = compared_revisions(history, pods, ctx.policy, ctx.container)
    if before is None or after is None:
        return []
    by_name = {(r.get("metadata") or {}).get("name"): r for r in facts.get("revisions") or []}
    workers = [lws_history.revision_lwt(by_name.get(row.replicaset) or {}).get("workerTemplate") or {}
               for row in (before, after)]
    changes = describe(revision_diff(workers[0], workers[1], None))
    return [f"step 3 — worker template: revision {before.number} → revision {after.number}",
            *(f"  {line}" for line in changes or ["no change in the compared fields"])]


def _toggles(ctx: K8sHost) -> list[str]:
    """The workload's timed toggles, expired or not (``remedies.diagnose.toggle_lines``): a Deployment's or a
    StatefulSet's records (an LWS keeps its own, which its writing deploys revert)."""
    if ctx.kind not in (DEPLOYMENT.word, STATEFULSET.word):
        return []
    notes = (deployment_object(host).get("metadata") or {}).get("annotations") or {}
    found = scan_toggles(ctx.keys, notes)[0]
    if not found:
        return []
    try:
        now = ctx.client.server_time()
    except KubeError as exc:
        return [f"timed toggle --{found[0].name}: cluster time unreadable ({exc})"]
    return toggle_lines(found, now, ctx.policy.enforce_eager.max_duration.total_seconds())


@operation(is_idempotent=True)
def report(tail: int = LOG_TAIL) -> Iterator[FunctionCommand]:
    """
    Print the startup log evidence, the bad-vs-good revision diff and the GPU picture (pods on each node, GPU
    memory held outside the pod from the DCGM exporter and vLLM's own startup line); change nothing.

    + tail: lines of each crashed container's log to read for the runbook's grep

    A Deployment's revisions are its ReplicaSets; a StatefulSet's and a LeaderWorkerSet's their
    ControllerRevisions (an LWS: the leader's template, then the worker's, and the logs of leader and worker pods).

    **Example:**

    .. code:: python

        diagnose.report(name="Read the startup log and what changed")
    """
    ctx = k8s_host(host)
    found = _set_inputs(ctx) if ctx.kind in set_reads.SETS else _deployment_inputs(ctx)
    nodes = host.get_fact(GpuNodes)
    if found is None or nodes is None:
        return  # pyinfra already failed the host with the fact's error
    logs: dict[str, list[str]] = {}
    for pod, container, previous in crashed_containers(found.pods, found.container):
        try:
            text = ctx.client.pod_log(ctx.namespace, pod, container, previous=previous, tail_lines=tail)
        except KubeError:
            continue  # the pods' fact already carries why the log is unreadable
        logs[f"{pod}/{container}"] = text.splitlines()
    lines = diagnose_lines(found.history, found.pods, nodes, logs, ctx.policy, found.container, found.memory,
                           ctx.namespace)
    at = lines.index("step 3 — GPUs:")  # a kind's own lines: after step 3's diff, and under step 2's headline
    lines[at:at] = [*found.extra, *(f"  {line}" for line in _toggles(ctx))]
    lines[1:1] = found.groups
    # one element per printed line: a newline in a manifest value (a flag, an env value in step 3's diff) is escaped,
    # never a line of its own that could pass for the report's ("fake", "Success")
    show(state, host, [escaped(line) for line in lines], topic="diagnose")
    return
    yield  # a generator that never yields: diagnosis is read-only
