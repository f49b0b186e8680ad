"""Runbook step 1 for a LeaderWorkerSet (multi-node vLLM): a crash-looping template rolled back to the previous
ControllerRevision, then waited for, failing fast if that one crash-loops too.

Why by hand: kubectl has no ``rollout undo`` for an LWS. The write is what kubectl's StatefulSet undo would be:
``spec.leaderWorkerTemplate`` replaced by the revision's, guarded by resourceVersion, so an edit made after the
plan is refused rather than overwritten. The target's leader and worker templates must agree on every flag that
moves memory (one engine spans the group), and its prediction splits the model TP × PP ways across the group.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pyinfra import host, state
from pyinfra.api import FunctionCommand, operation

from vllm_remedy.errors import UserError
from vllm_remedy.facts.leaderworkerset import LeaderWorkerSetState
from vllm_remedy.kube import lws_history
from vllm_remedy.kube.client import KubeClient
from vllm_remedy.kube.clock import ClusterClock
from vllm_remedy.kube.diff import unified_template_diff
from vllm_remedy.kube.health import pod_health
from vllm_remedy.kube.lws_wait import lws_path, read_set, wait_for_lws_rollout
from vllm_remedy.kube.wait import RESTART_LIMIT, crashing_container
from vllm_remedy.operations.util import k8s_host, noop, observe, refuse, show, write_command
from vllm_remedy.operations.util.show import note
from vllm_remedy.remedies.predict import predict_template
from vllm_remedy.vllm.parallel import world_size


def _plan(lws: dict[str, Any], revisions: list[dict[str, Any]], container: str | None) -> lws_history.LwsUndoPlan:
    plan = lws_history.plan_undo(lws, revisions)
    lws_history.check_consistent(plan.lwt, f"revision {plan.revision}", container)
    return plan


def _undo_ops(client: KubeClient, basis: dict[str, Any], at: float) -> list[dict[str, Any]]:
    """The rollback planned on ``basis`` against the ControllerRevisions read now; [] when already in place."""
    meta = basis["metadata"]
    _, revisions, _ = read_set(client, meta["namespace"], meta["name"])
    plan = _plan(basis, revisions, None)
    return [] if plan.skipped else plan.patch


def prediction_line(lwt: dict[str, Any], number: int, container: str | None) -> str:
    """The memory model's verdict on the revision's leader, the model split TP × PP ways over the group."""
    leader, _ = lws_history.servers(lwt, container)
    size = int(lwt.get("size", 1) or 1)
    split = f"TP × PP = {world_size(leader.flags)} GPUs over {size} pods"
    return f"revision {number}: {predict_template(lws_history.leader_template(lwt), container).line()} ({split})"


@operation()
def rollback(wait: bool = True, timeout: float | None = None) -> Iterator[FunctionCommand]:
    """
    Roll a crash-looping LeaderWorkerSet back to its previous template and wait until every group is Ready.

    + wait: wait for the rollout, failing fast on a crash loop
    + timeout: cluster seconds to wait; default the policy's ``restore.rollout_timeout``

    Nothing happens when no pod of the set's current template is crash-looping.
    """
    ctx = k8s_host(host)
    facts = host.get_fact(LeaderWorkerSetState)
    lws, revisions, pods = facts["leaderworkerset"], facts["revisions"], facts["pods"]
    where = f"leaderworkerset {ctx.namespace}/{ctx.deployment}"
    current = lws_history.update_hash(lws, revisions)
    crashing = sorted(p["metadata"]["name"] for p in pods
                      if current and (p["metadata"].get("labels") or {}).get(lws_history.REVISION_LABEL) == current
                      and crashing_container(pod_health(p), RESTART_LIMIT))
    if not crashing:
        noop(state, host, f"nothing to restore: no pod of {where}'s current template is crash-looping")
        return
    try:
        plan = _plan(lws, revisions, ctx.container)
    except UserError as exc:
        yield from refuse(state, host, f"{where}: pods {', '.join(crashing)} crash-loop and {exc}; nothing was changed")
        return
    if plan.skipped:
        noop(state, host, f"{where} already has revision {plan.revision}'s template")
        return
    number = next((r.number for r in lws_history.lws_history(lws, revisions) if r.current), 0)
    summary = (f"roll back {where} from revision {number} to revision {plan.revision} ({plan.controller_revision}) "
               f"— pods {', '.join(crashing)} crash-loop")
    path = lws_path(ctx.namespace, ctx.deployment)
    observe(state, host, path, lws)
    before = lws_history.lwt_of(lws)
    show(state, host, [summary, unified_template_diff(before, plan.lwt).rstrip("\n"),
                       prediction_line(plan.lwt, plan.revision, ctx.container)])
    yield write_command(path, _undo_ops, summary)
    if wait:
        seconds = timeout if timeout is not None else ctx.policy.restore.rollout_timeout.total_seconds()
        yield FunctionCommand(wait_rolled_out, (seconds, f"wait for revision {plan.revision} to roll out"), {})


@operation()
def unsupported(what: str) -> Iterator[FunctionCommand]:
    """
    Refuse, in one line, a remediation that must write both of an LWS's pod templates and does not yet.

    + what: the remediation, as the line names it ("pinning the GPU type")
    """
    ctx = k8s_host(host)
    yield from refuse(state, host, f"leaderworkerset {ctx.namespace}/{ctx.deployment}: {what} is not supported for "
                      "a LeaderWorkerSet yet (it must write the leader and the worker template both); nothing was "
                      "changed")


def wait_rolled_out(state: Any, host: Any, timeout: float, label: str) -> bool:
    """FunctionCommand body: wait in cluster time until every group is Ready on the current template."""
    try:
        ctx = k8s_host(host)
        result = wait_for_lws_rollout(ctx.client, ctx.namespace, ctx.deployment, timeout=timeout,
                                      clock=ClusterClock(ctx.client))
    except UserError as exc:
        note(host, f"{label}: {exc}", error=True)
        return False
    if result.ok:
        note(host, f"{label}: {result.message} after {result.elapsed:.0f}s (cluster time)")
        return True
    note(host, f"{label}: {result.outcome} after {result.elapsed:.0f}s: {result.message}", error=True)
    return False
