"""Runbook step 1 for a StatefulSet: a crash-looping revision rolled back to the newest earlier one nothing speaks
against, then waited for — and, where the controller will never replace a pod by itself, that said, naming the
pods, and the pods deleted only when the policy allows it (``restore.delete_pods: blocking``) — and then as a
RollingUpdate would: pods that serve nothing first, each Ready pod only once every other pod serves the update
revision, one at a time, highest ordinal first, and never onto a template edited after this run's write
(``sts_unblock.wait_and_unblock``). Never onto a template that is not our write at all (``sts_wait.foreign_update``),
under OnDelete or OrderedReady alike, even one judged good: the controller would never move those pods, so a
colleague's patch is rolled out by whoever reviews it, not by a deploy that happens to run next; the pods are named
and the host does not fail for it when this run wrote nothing.

The choice is the Deployment's (``remedies.restore.decide_restore`` over the StatefulSetState fact's rows, a
ControllerRevision standing for a ReplicaSet): skipped, and said why, is every revision seen crash-looping
(recorded on its ControllerRevision by ``operations.sts_evidence``), with no node for its pods, or predicted to
fail on the GPU they would get; ``--data revision=N`` names the target instead, refused with evidence against it
unless ``--data override=evidence``. The write is kubectl's undo (``spec.template`` back to the revision's, which
the controller then renumbers to the top) plus our audit annotations, guarded by resourceVersion.

Why a StatefulSet needs more than the undo: under the default ``OrderedReady`` policy the controller does not
move past a pod that is not Running and Ready, so the crash-looping pod of the bad revision keeps the rollback
from ever reaching it (the Kubernetes docs' "forced rollback"); under ``OnDelete`` no pod changes until it is
deleted; and a RollingUpdate ``partition`` keeps the pods below it on the revision they run.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pyinfra import host, state
from pyinfra.api import FunctionCommand, operation

from vllm_remedy.facts.nodes import NodeObjects
from vllm_remedy.facts.statefulset import StatefulSetState
from vllm_remedy.kube.annotations import template_digest
from vllm_remedy.kube.health import pod_health
from vllm_remedy.kube.history import templates_equal
from vllm_remedy.kube.sts_history import REVISION_LABEL
from vllm_remedy.kube.sts_wait import (
    deletion_order,
    foreign_update,
    held_by_partition,
    ordinal,
    partition_floor,
    partition_of,
    pod_names,
    rows_rolled_out,
    stuck_after,
    stuck_pods,
)
from vllm_remedy.operations.restore import checked_revision, set_decision
from vllm_remedy.operations.sts_unblock import (
    blocked_in_plan,
    delete_stuck,
    foreign_line,
    plan_rolled_out,
    wait_and_unblock,
)
from vllm_remedy.operations.sts_update import judge_update
from vllm_remedy.operations.util import (
    Change,
    K8sHost,
    change_command,
    change_lines,
    fail,
    k8s_host,
    keeps_its_plan,
    noop,
    observe,
    refuse,
    show,
)
from vllm_remedy.operations.util.plan import edited_since_read
from vllm_remedy.operations.util.write import changed_since
from vllm_remedy.remedies.predict import predict_template
from vllm_remedy.remedies.restore import NONE, REFUSE, ROLLBACK, RestoreDecision

RESTORE = "restore"


def _decision(ctx: K8sHost, facts: Mapping[str, Any], forced: int | None) -> RestoreDecision:
    nodes = (host.get_fact(NodeObjects) or {}).get("nodes")
    decision = set_decision(ctx, facts, forced)
    # pods to delete onto an update revision nobody judged (a colleague's edit over the bad one): judged first
    return decision if forced is not None else judge_update(decision, facts, ctx.policy, ctx.container, nodes)


def forced_revision() -> int | None:
    """Host data ``revision`` checked before any operation is planned, as for a Deployment (``checked_revision``);
    a number an undo of ours renumbered counts (the set's fact keeps it as the Deployment's ReplicaSet does)."""
    return checked_revision(host.data.get("revision"), lambda: host.get_fact(StatefulSetState)["rollout"]["revisions"],
                            lambda number: _decision(k8s_host(host), host.get_fact(StatefulSetState), number),
                            "; an undo renumbers the revision it restores")


def strategy_lines(sts: Mapping[str, Any], pods: Sequence[Mapping[str, Any]], target: str, delete_pods: str
                   ) -> list[str]:
    """What the update strategy means for a rollback to ControllerRevision ``target``, naming the pods (pure)."""
    spec = sts.get("spec") or {}
    strategy = spec.get("updateStrategy") or {}
    live = sorted((p for p in pods if not (p.get("metadata") or {}).get("deletionTimestamp")),
                  key=lambda p: ordinal(p["metadata"]["name"]))
    off = [p["metadata"]["name"] for p in live if (p["metadata"].get("labels") or {}).get(REVISION_LABEL) != target]
    act = ("deleted (policy restore.delete_pods: blocking)" if delete_pods == "blocking"
           else "named, not deleted (policy restore.delete_pods: never): delete them for the rollback to take effect")
    if strategy.get("type") == "OnDelete":
        if not off:
            return ["then: updateStrategy OnDelete: every pod already runs the revision restored"]
        return [f"then: updateStrategy OnDelete: the rollback reaches a pod only when it is deleted; pods "
                f"{', '.join(off)} stay on their revision until then: {act}",
                *([deletion_order(live, off)] if delete_pods == "blocking" else [])]
    lines, partition, floor = [], partition_of(sts), partition_floor(sts)  # the partition counts from ordinals.start
    if partition:
        names = pod_names(sts, pods)  # as read before the write, and the same after it
        held = [n for n in names if ordinal(n) < floor]
        reached = [n for n in names if ordinal(n) >= floor]
        lines.append(f"then: updateStrategy RollingUpdate partition {partition}: the rollback replaces only pods with "
                     f"ordinal >= {floor} ({', '.join(reached) or 'none'}); pods below it "
                     f"({', '.join(held) or 'none'}) keep the revision they run until the partition is lowered — "
                     "as it held back the bad rollout, it holds back the rollback")
    if spec.get("podManagementPolicy", "OrderedReady") != "OrderedReady":
        return [*lines, "then: podManagementPolicy Parallel: the controller replaces the bad revision's pods itself"]
    crashing = [p["metadata"]["name"] for p in live if p["metadata"]["name"] in off and pod_health(p).crash_looping]
    blocking = f"pods {', '.join(crashing)}" if crashing else "a crash-looping pod of the bad revision"
    return [*lines, f"then: podManagementPolicy OrderedReady: {blocking} block the rollback until deleted; such "
            f"pods are {act}"]


@operation()
@keeps_its_plan
def rollback(wait: bool = True, timeout: float | None = None, revision: int | None = None
             ) -> Iterator[FunctionCommand]:
    """
    Roll a crash-looping StatefulSet back to the newest earlier revision nothing speaks against and wait until
    it is Ready.

    + wait: wait for the rollout, failing fast on a crash loop (recorded on that revision); pods the controller
      will not replace by itself are deleted when the policy's ``restore.delete_pods`` is ``blocking``, else
      named and the host fails
    + timeout: cluster seconds to wait; default the policy's ``restore.rollout_timeout``
    + revision: the operator's target (``--data revision=N``, checked by :func:`forced_revision`)

    Nothing happens when no pod of the set's update revision is crash-looping — but a rollout still under way (a
    rerun after the first run died mid-wait) is waited for again, and pods that only deleting would move onto an
    update revision something speaks against (``sts_update.judge_update``) are rolled back instead.
    """
    ctx = k8s_host(host)
    facts = host.get_fact(StatefulSetState)
    sts, pods, rows = facts["statefulset"], facts["pods"], facts["pod_rows"]["pods"]
    if state.is_executing:  # a prompted run: what was approved is planned on the set as read then, or nothing runs
        edited = _spec_edited(ctx, sts)
        if edited:
            yield FunctionCommand(fail, (edited,), {})
            return
    decision = _decision(ctx, facts, revision)
    seconds = timeout if timeout is not None else ctx.policy.restore.rollout_timeout.total_seconds()
    skipped = [f"skipped {line}" for line in decision.skipped]
    if decision.action == NONE:
        yield from _resume(ctx, sts, pods, rows, decision, wait, seconds)
        return
    if decision.action != ROLLBACK or decision.replicaset is None:
        show(state, host, skipped, topic="skipped")
        yield from refuse(state, host, decision.reason if decision.action == REFUSE else
                          f"{decision.reason} — not for a StatefulSet: its step 1 only rolls back")
        return
    before = (sts.get("spec") or {}).get("template") or {}
    if templates_equal(before, decision.template):
        noop(state, host, f"{ctx.where} already has revision {decision.revision}'s template")
        return
    held = held_by_partition(sts, pods)
    if held:  # the rollback would reach none of them, and -y would wait on them until its timeout
        partition = partition_of(sts)
        yield from refuse(state, host, f"{ctx.where}: updateStrategy partition {partition} keeps crash-looping pod(s) "
                          f"{', '.join(held)} below it: neither a rollback nor a deletion reaches them (a pod deleted "
                          "below the partition comes back at the current revision); lower "
                          "spec.updateStrategy.rollingUpdate.partition, then rerun")
        return
    summary = (f"roll back {ctx.where} from revision {decision.current} to revision {decision.revision} "
               f"({decision.replicaset}) — chosen by rule: {decision.rule}")
    observe(state, host, ctx.deployment_path, sts)
    show(state, host, [decision.reason, *skipped, *decision.warnings], topic="skipped")
    show(state, host, [*change_lines(ctx, summary, before, decision.template,
                                     predict_template(decision.template, ctx.container)),
                       *strategy_lines(sts, pods, decision.replicaset, ctx.policy.restore.delete_pods)])
    why = ("the operator forced it (host data revision)" if revision is not None
           else f"revision {decision.current} crash-looped" if decision.failures
           else f"revision {decision.current} would fail once its pods are deleted")
    notes = (sts.get("metadata") or {}).get("annotations") or {}
    # toggle records belong to the template this write replaces: all go (a Deployment's undo drops them too), so a
    # forced toggled revision keeps its flag with no expiry, as warned, and no revert rolls the set again
    drops: dict[str, str | None] = {key: None for key in notes if ctx.keys.is_toggle_key(key)}
    change = Change(spec={"template": dict(decision.template)}, annotations=drops,
                    audit=(RESTORE, f"roll back to revision {decision.revision} ({decision.rule}): {why}"))
    label = f"wait for revision {decision.revision} to roll out"
    if wait:  # the run's later operations plan on the set this wait leaves (or on a host it fails)
        plan_rolled_out(host, ctx.deployment_path, decision.template)
        blocked_in_plan(ctx, {**sts, "spec": {**(sts.get("spec") or {}), "template": decision.template}},
                        stuck_after(sts, pods, _off(pods, decision.replicaset)), label)
    yield change_command(ctx, ctx.deployment_path, change, summary)
    if wait:
        yield FunctionCommand(wait_and_unblock, (seconds, label), {})


def _off(pods: Sequence[Mapping[str, Any]], revision: str | None) -> list[str]:
    """Live pods not on ControllerRevision ``revision``, by ordinal."""
    return sorted((str(p["metadata"]["name"]) for p in pods if not (p.get("metadata") or {}).get("deletionTimestamp")
                   and (p["metadata"].get("labels") or {}).get(REVISION_LABEL) != revision), key=ordinal)


def _spec_edited(ctx: K8sHost, sts: Mapping[str, Any]) -> str | None:
    """At execute, one line when someone changed the set's spec since the approved plan read it (a new template, a
    scale, another strategy): replanned now, the run could wait on or delete pods of a rollout nobody approved.
    An edit of its metadata only leaves the plan as it was: the write goes ahead and its resourceVersion guard
    refuses it ("changed since it was read"), as a Deployment's does."""
    prior = changed_since(state, host, ctx.deployment_path, sts)
    if prior is None or prior.get("spec") == sts.get("spec"):
        return None
    return edited_since_read(dict(sts))


def _resume(ctx: K8sHost, sts: Mapping[str, Any], pods: list[dict[str, Any]], rows: list[dict[str, Any]],
            decision: RestoreDecision, wait: bool, seconds: float) -> Iterator[FunctionCommand]:
    """No crash loop now: finish a rollback that only deleting pods can finish, or wait again for one of ours that
    is still rolling out (the run that wrote it died mid-wait); else say why nothing happens."""
    notes = (sts.get("metadata") or {}).get("annotations") or {}
    ours = (notes.get(ctx.keys.last_action) == RESTORE and notes.get(ctx.keys.last_action_template)
            == template_digest((sts.get("spec") or {}).get("template")))
    stuck = stuck_pods(dict(sts), pods)
    if wait and stuck and foreign_update(sts, ctx.keys.last_action_template):
        noop(state, host, foreign_line(ctx.where, stuck))  # onto a template we did not write: not ours to do
        return
    if wait and stuck:
        show(state, host, [f"{ctx.where}: pods {', '.join(stuck)} stay on another revision until deleted",
                           *strategy_lines(sts, pods, str((sts.get("status") or {}).get("updateRevision")),
                                           ctx.policy.restore.delete_pods)])
        label = f"finish the rollout of {ctx.where}"
        digest = template_digest((sts.get("spec") or {}).get("template"))  # pods go only onto the template shown
        plan_rolled_out(host, ctx.deployment_path, (sts.get("spec") or {}).get("template"))
        blocked_in_plan(ctx, sts, stuck, label)
        if ctx.policy.restore.delete_pods == "blocking":  # its own command: a deletion is a change made, say so
            yield FunctionCommand(delete_stuck, (label, digest), {})
        yield FunctionCommand(wait_and_unblock, (seconds, label, digest), {})
        return
    if wait and not rows_rolled_out(sts, rows):
        # as the Deployment's "Wait until the new pods are Ready": a run killed mid-wait — after our write, or after
        # it deleted the pods blocking someone's rollout (then nothing of ours is on the set) — is waited for again
        last = notes.get(ctx.keys.last_action)
        label = f"wait for {ctx.where} to roll out" + (
            f" (last vllm-remedy write: {last} at {notes.get(ctx.keys.last_action_at, '?')})" if last else "")
        show(state, host, [f"{ctx.where}: the rollback of ours is still rolling out; waiting for it again" if ours
                           else f"{ctx.where}: a rollout is under way; waiting until its pods are Ready"])
        plan_rolled_out(host, ctx.deployment_path, (sts.get("spec") or {}).get("template"))
        yield FunctionCommand(wait_and_unblock, (seconds, label, template_digest((sts.get("spec") or {}).get(
            "template"))), {})
        return
    noop(state, host, f"nothing to restore: {decision.reason}")
