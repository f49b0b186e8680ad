"""Runbook step 1 for a LeaderWorkerSet (multi-node vLLM): a crash-looping template rolled back to the newest earlier
ControllerRevision nothing speaks against, then waited for, failing fast if that one crash-loops too.

The choice is the Deployment's and the StatefulSet's (``remedies.restore.decide_restore`` over the
LeaderWorkerSetState fact's rows, a ControllerRevision standing for a ReplicaSet, the leader's template for the pod
template): skipped, and said why, is every revision seen crash-looping (recorded on its ControllerRevision by
``operations.lws_evidence``), with no node for its pods, or predicted to fail — its group's world size (TP × PP
above the group's GPUs, ``start_check``) included, so a layout that cannot start is reached past, never chosen and
then refused; ``--data revision=N`` names the target instead, refused with evidence against it unless
``--data override=evidence``.

Why by hand: kubectl has no ``rollout undo`` for an LWS. The write is what kubectl's StatefulSet undo would be:
``spec.leaderWorkerTemplate`` replaced by the revision's, plus our audit annotations (change-cause, last-action),
guarded by resourceVersion, so an edit made after the plan is refused rather than overwritten. The target's
leader and worker templates must agree on every flag that moves memory (one engine spans the group), and its
prediction splits the model TP × PP ways across the group.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pyinfra import host, state
from pyinfra.api import FunctionCommand, operation

from vllm_remedy.errors import UserError
from vllm_remedy.facts.leaderworkerset import LeaderWorkerSetState
from vllm_remedy.kube import lws_history
from vllm_remedy.kube.clock import ClusterClock
from vllm_remedy.kube.diff import unified_template_diff
from vllm_remedy.kube.errors import KubeError
from vllm_remedy.kube.history import Revision
from vllm_remedy.kube.lws_wait import (
    fresh_pods,
    groups_rolled_out,
    lws_path,
    observed_generation,
    read_set,
    wait_for_lws_rollout,
)
from vllm_remedy.kube.serving import ServingGate
from vllm_remedy.operations.lws_evidence import record_wait_crash
from vllm_remedy.operations.restore import checked_revision, set_decision
from vllm_remedy.operations.util import (
    Change,
    K8sHost,
    change_command,
    fail,
    k8s_host,
    keeps_its_plan,
    noop,
    observe,
    refuse,
    show,
)
from vllm_remedy.operations.util.plan import edited_since_read
from vllm_remedy.operations.util.show import note
from vllm_remedy.operations.util.template import stale_toggles
from vllm_remedy.operations.util.write import changed_since
from vllm_remedy.remedies.evidence import StartCheck
from vllm_remedy.remedies.predict import predict_template
from vllm_remedy.remedies.restore import NONE, REFUSE, ROLLBACK, RestoreDecision
from vllm_remedy.vllm.parallel import world_size

RESTORE = "restore"


def forced_revision() -> int | None:
    """Host data ``revision`` checked before any operation is planned, as for a Deployment or StatefulSet
    (``checked_revision``)."""
    return checked_revision(host.data.get("revision"),
                            lambda: host.get_fact(LeaderWorkerSetState)["rollout"]["revisions"],
                            lambda number: _decision(k8s_host(host), host.get_fact(LeaderWorkerSetState), number),
                            "; a rollback renumbers the revision it restores")


def start_check(facts: Mapping[str, Any], container: str | None, resource: str) -> StartCheck:
    """Restore's candidate filter for what the leader's pod template alone does not say: a revision whose world
    size (TP × PP) exceeds its group's GPUs is predicted to fail, so the choice reaches further back instead."""
    def check(rev: Revision) -> str | None:
        try:
            short = lws_history.world_size_shortfall(_target_lwt(facts, rev.replicaset), container, resource)
        except UserError:
            return None  # no vLLM server in the leader, a gone revision: the rollback's own checks say so
        return f"predicted to fail: {short}" if short is not None else None
    return check


def _decision(ctx: K8sHost, facts: Mapping[str, Any], forced: int | None = None) -> RestoreDecision:
    """The set kinds' shared choice with the group's world size asked of every candidate."""
    return set_decision(ctx, facts, forced, start_check(facts, ctx.container, ctx.policy.gpu.resource))


def prediction_line(lwt: dict[str, Any], number: int, container: str | None, resource: str = "nvidia.com/gpu"
                    ) -> str:
    """The memory model's verdict on the revision's leader, the model split TP × PP ways over the group — or the
    failure vLLM reports before any memory is sized: a world size larger than the group's GPUs."""
    short = lws_history.world_size_shortfall(lwt, container, resource)
    if short is not None:
        return f"revision {number}: predicted to fail: {short}"
    leader, _ = lws_history.servers(lwt, container)
    size = int(lwt.get("size", 1) or 1)
    split = f"TP × PP = {world_size(leader.flags)} GPUs over {size} pods"
    return f"revision {number}: {predict_template(lws_history.leader_template(lwt), container).line()} ({split})"


def _target_lwt(facts: Mapping[str, Any], name: str | None) -> dict[str, Any]:
    """The leaderWorkerTemplate the ControllerRevision ``name`` records."""
    rev = next((r for r in facts["revisions"] if (r.get("metadata") or {}).get("name") == name), None)
    if rev is None:
        raise UserError(f"controllerrevision {name} is gone")
    return lws_history.revision_lwt(rev)


def groups_ready(lws: Mapping[str, Any], revisions: Sequence[Mapping[str, Any]] = (),
                 pods: Sequence[dict[str, Any]] | None = None) -> bool:
    """Every group Ready on the current template, as far as the set's status says once its controller has recorded
    the current generation (``kube.lws_wait.observed_generation``). A controller before v0.9.0 records none, and
    then the status alone cannot tell a synced set from one whose counts still describe the last spec: the answer
    is the wait's own (``groups_rolled_out``: the current template's ControllerRevision and every pod on its hash)
    when ``pods`` are given, else False (the caller waits, and that wait finishes)."""
    seen = observed_generation(lws)
    if seen is None:
        return pods is not None and groups_rolled_out(lws, revisions, pods)
    spec, status = lws.get("spec") or {}, lws.get("status") or {}
    replicas = int(spec.get("replicas", 1) or 0)
    observed = seen >= int((lws.get("metadata") or {}).get("generation") or 0)
    return observed and all(int(status.get(k) or 0) == replicas for k in ("readyReplicas", "updatedReplicas"))


def crashing_pods(facts: Mapping[str, Any]) -> list[str]:
    """The current template's crash-looping pods (the LeaderWorkerSetState fact's pod rows), by name."""
    return sorted(p["name"] for p in facts["pod_rows"]["pods"] if p.get("new") and not p.get("deleting") and any(
        c.get("crash_looping") for c in p.get("containers") or []))


@operation()
@keeps_its_plan
def rollback(wait: bool = True, timeout: float | None = None, revision: int | None = None
             ) -> Iterator[FunctionCommand]:
    """
    Roll a crash-looping LeaderWorkerSet back to the newest earlier revision nothing speaks against and wait until
    every group is Ready.

    + wait: wait for the rollout, failing fast on a crash loop
    + timeout: cluster seconds to wait; default the policy's ``restore.rollout_timeout``
    + revision: the operator's target (``--data revision=N``, checked by :func:`forced_revision`)

    Nothing happens when no pod of the set's current template is crash-looping — but a rollout still under way (a
    rerun after the first run died mid-wait) is waited for again, failing fast if it crash-loops, as a Deployment's.
    Toggle records whose flag the restored template does not run go in the same write.
    """
    ctx = k8s_host(host)
    facts = host.get_fact(LeaderWorkerSetState)
    lws = facts["leaderworkerset"]
    path = lws_path(ctx.namespace, ctx.deployment)
    if state.is_executing:  # a prompted run: what was approved is planned on the set as read then, or nothing runs
        prior = changed_since(state, host, path, lws)
        if prior is not None and prior.get("spec") != lws.get("spec"):
            yield FunctionCommand(fail, (edited_since_read(dict(lws)),), {})
            return
    decision = _decision(ctx, facts, revision)
    skipped = [f"skipped {line}" for line in decision.skipped]
    if decision.action == NONE and wait and not groups_ready(lws, facts["revisions"], facts["pods"]):
        # a run killed mid-wait (kill -9, a lost terminal): the rollout it started, or anyone's, is waited for again
        notes = (lws.get("metadata") or {}).get("annotations") or {}
        last = notes.get(ctx.keys.last_action)
        label = f"wait for {ctx.where} to roll out" + (
            f" (last vllm-remedy write: {last} at {notes.get(ctx.keys.last_action_at, '?')})" if last else "")
        show(state, host, [f"{ctx.where}: a rollout is under way; waiting until every group is Ready"])
        seconds = timeout if timeout is not None else ctx.policy.restore.rollout_timeout.total_seconds()
        yield FunctionCommand(wait_rolled_out, (seconds, label), {})
        return
    if decision.action == NONE:
        noop(state, host, f"nothing to restore: no pod of {ctx.where}'s current template is crash-looping"
             if revision is None else f"nothing to restore: {decision.reason}")
        return
    crashing = crashing_pods(facts)
    if decision.action != ROLLBACK or decision.revision is None:
        show(state, host, skipped, topic="skipped")
        yield from refuse(state, host, decision.reason if decision.action == REFUSE else
                          f"{decision.reason} — not for a LeaderWorkerSet: its step 1 only rolls back")
        return
    try:
        lwt = _target_lwt(facts, decision.replicaset)
        lws_history.check_consistent(lwt, f"revision {decision.revision}", ctx.container)
        short = lws_history.world_size_shortfall(lwt, ctx.container, ctx.policy.gpu.resource)
        if short is not None:
            raise UserError(f"revision {decision.revision} cannot start either: {short}")
    except UserError as exc:
        yield from refuse(state, host, f"{ctx.where}: pods {', '.join(crashing) or '(none)'} crash-loop and {exc}; "
                          "nothing was changed")
        return
    before = lws_history.lwt_of(lws)
    if lws_history.lwts_equal(lwt, before):
        noop(state, host, f"{ctx.where} already has revision {decision.revision}'s template")
        return
    summary = (f"roll back {ctx.where} from revision {decision.current} to revision {decision.revision} "
               f"({decision.replicaset}) — chosen by rule: {decision.rule}"
               + (f" — pods {', '.join(crashing)} crash-loop" if crashing else ""))
    observe(state, host, path, lws)
    show(state, host, [decision.reason, *skipped, *decision.warnings], topic="skipped")
    outage = lws_history.rollout_outage(lws)
    show(state, host, [summary, unified_template_diff(before, lwt).rstrip("\n"),
                       prediction_line(lwt, decision.revision, ctx.container, ctx.policy.gpu.resource),
                       *([f"warning: {outage}"] if outage else [])])
    why = (f"revision {decision.current} crash-looped" if revision is None
           else "the operator forced it (host data revision)")
    notes = (lws.get("metadata") or {}).get("annotations") or {}
    drops = stale_toggles(ctx.keys, notes, lws_history.leader_template(lwt), ctx.container)
    change = Change(spec={"leaderWorkerTemplate": lwt}, annotations=drops,
                    audit=(RESTORE, f"roll back to revision {decision.revision} ({decision.rule}): {why}"))
    yield change_command(ctx, path, change, summary)
    if wait:
        seconds = timeout if timeout is not None else ctx.policy.restore.rollout_timeout.total_seconds()
        yield FunctionCommand(wait_rolled_out, (seconds, f"wait for revision {decision.revision} to roll out"), {})


def unserved_leaders(ctx: K8sHost) -> list[str]:
    """The current template's leaders whose vLLM container has no readiness or startup probe and whose log does not
    show it serving yet (``kube.serving``), read now; [] when none, or when they cannot be read."""
    client = ctx.client.live()
    try:
        lws, revisions, pods = read_set(client, ctx.namespace, ctx.deployment)
    except KubeError:
        return []
    leaders = [p for p in fresh_pods(lws, revisions, pods)[0]
               if (p["metadata"].get("labels") or {}).get(lws_history.WORKER_LABEL, "0") == "0"]
    return ServingGate(client, ctx.namespace, ctx.container, look=0.0).waiting(leaders)


def wait_rolled_out(state: Any, host: Any, timeout: float, label: str) -> bool:
    """FunctionCommand body: wait in cluster time until every group is Ready on the current template."""
    try:
        ctx = k8s_host(host)
        gate = ServingGate(ctx.client.live(), ctx.namespace, ctx.container)  # probe-less leaders must serve
        result = wait_for_lws_rollout(ctx.client, ctx.namespace, ctx.deployment, timeout=timeout,
                                      clock=ClusterClock(ctx.client), gate=gate)
    except UserError as exc:
        note(host, f"{label}: {exc}", error=True)
        return False
    if result.ok:
        note(host, f"{label}: {result.message} after {result.elapsed:.0f}s (cluster time)")
        return True
    note(host, f"{label}: {result.outcome} after {result.elapsed:.0f}s: {result.message}", error=True)
    if result.crash is not None and result.outcome == "crash-loop":
        said = record_wait_crash(ctx, result.crash.pod, result.crash.failure)
        if said:
            note(host, f"{label}: {said}", error=said.startswith("warning"))
    return False
