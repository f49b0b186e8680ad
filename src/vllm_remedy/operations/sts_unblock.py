"""A StatefulSet rollout waited for, and unblocked where only deleting pods finishes it: the FunctionCommand
bodies that wait (cluster time), delete the pods the controller will not replace by itself when the policy allows
it (``restore.delete_pods: blocking``) - not-Ready pods first, then Ready ones one at a time, highest ordinal
first, never onto a template this run did not show - and record a crash loop they fail on; and, while detecting,
what those waits will find, so ``--dry`` plans and fails as ``-y`` will.

Apart from ``statefulset`` (step 1's rollback: which revision, the write) because every StatefulSet deploy that
changes the template ends in this same wait: the rollback, ``sts_rollout`` (budget, pin, eager mode, load caps)
and ``set_confirm``'s rolled-out check.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pyinfra import host, state

from vllm_remedy.errors import UserError
from vllm_remedy.kube.annotations import template_digest
from vllm_remedy.kube.clock import ClusterClock
from vllm_remedy.kube.serving import ServingGate
from vllm_remedy.kube.sts_wait import (
    BLOCKED,
    NOT_OURS,
    blocked_message,
    foreign_update,
    next_deletions,
    read_set,
    stuck_pods,
    wait_for_replacements,
    wait_for_sts_rollout,
)
from vllm_remedy.operations.sts_evidence import record_wait_crash
from vllm_remedy.operations.util import K8sHost, k8s_host
from vllm_remedy.operations.util.refusal import fails_later
from vllm_remedy.operations.util.show import note
from vllm_remedy.operations.util.write import wrote_in_this_run

_WAITED = "_vllm_remedy_sts_waited"


def plan_rolled_out(host: Any, path: str, template: Mapping[str, Any] | None) -> None:
    """While detecting: an operation of this run waits for the set at ``path`` to roll out onto ``template`` (it
    deletes what it must, or fails the host), so a later wait of the run plans on it rolled out — what ``-y`` finds
    there — instead of planning deletions on the template before the rollback."""
    real = getattr(host, "state", None)
    if real is None or real.is_executing:
        return
    if not hasattr(real, _WAITED):
        setattr(real, _WAITED, set())
    getattr(real, _WAITED).add((str(host.name), path, template_digest(template)))


def planned_rolled_out(host: Any, path: str, template: Mapping[str, Any] | None) -> bool:
    """While detecting: an earlier operation of this run waits for the set to roll out onto ``template``."""
    real = getattr(host, "state", None)
    return (
        real is not None
        and not real.is_executing
        and (str(host.name), path, template_digest(template)) in getattr(real, _WAITED, set())
    )


def blocked_in_plan(ctx: K8sHost, sts: Mapping[str, Any], stuck: Sequence[str], label: str) -> None:
    """While detecting, under ``restore.delete_pods: never``: pods the controller will not move by itself
    (``stuck``: every pod left on another revision under OnDelete, a crash-looping or unschedulable one under
    OrderedReady — ``sts_wait.stuck_after``) block the wait as ``-y`` will find it, so the host is marked failed here
    too (``--dry`` exits 1, as ``-y``), with the line ``-y``'s wait prints. Marked failed as ``refusal.record`` does,
    not recorded as a refusal: the write before the wait is still made (``-y`` makes it, then fails), so the plan
    keeps it and a prompted run still runs it."""
    if state.is_executing or not stuck or ctx.policy.restore.delete_pods == "blocking":
        return
    line = f"{label}: blocked: {blocked_message(dict(sts), list(stuck))} (policy restore.delete_pods: never)"
    note(host, line, error=True)
    fails_later(state, host)


def foreign_line(where: str, stuck: Sequence[str]) -> str:
    """Why pods stay when the set's template is not our write (``sts_wait.foreign_update``)."""
    return f"{where}: pods {', '.join(stuck)} stay on their revision: {NOT_OURS}"


def _on_delete(sts: Mapping[str, Any]) -> bool:
    return ((sts.get("spec") or {}).get("updateStrategy") or {}).get("type") == "OnDelete"


def _expected(ctx: K8sHost, wrote: bool, digest: str | None) -> str | None:
    """The template digest pods may be deleted onto: the one our write of this run recorded on the set, else the one
    the approved plan read (``digest``), else the one read now."""
    sts, _ = read_set(ctx.client, ctx.namespace, ctx.deployment)
    notes = (sts.get("metadata") or {}).get("annotations") or {}
    return (
        (wrote and notes.get(ctx.keys.last_action_template))
        or digest
        or template_digest((sts.get("spec") or {}).get("template"))
    )


def _delete_next(host: Any, label: str, expected: str | None, wrote: bool) -> list[str]:
    """Delete the pods to delete now (``sts_wait.next_deletions``), read now, saying each; their names. Refused
    (UserError) when the set's template is no longer ``expected``: its pods would roll onto a revision nobody
    approved in this run."""
    ctx = k8s_host(host)
    sts, pods = read_set(ctx.client, ctx.namespace, ctx.deployment)
    victims = next_deletions(sts, pods)
    if victims and expected and template_digest((sts.get("spec") or {}).get("template")) != expected:
        raise UserError(
            f"{ctx.where} edited after this run's "
            + ("write" if wrote else "read")
            + ": not deleting pods for a revision this run did not show"
        )
    for name in victims:
        ctx.client.request("DELETE", ctx.client.object_path(ctx.namespace, "pods", name, group="v1"))
        note(host, f"{label}: deleted pod {name} (policy restore.delete_pods: blocking)")
    return victims


def delete_stuck(state: Any, host: Any, label: str, digest: str | None = None) -> bool:
    """FunctionCommand body: the first pods blocking a rollout judged good (``sts_update.judge_update``) deleted —
    those not Ready; a Ready one only when all others are Ready on the update revision (``wait_and_unblock`` does
    the rest, one at a time)."""
    try:
        _delete_next(host, label, _expected(k8s_host(host), False, digest), False)
    except UserError as exc:
        note(host, f"{label}: {exc}", error=True)
        return False
    return True


def wait_and_unblock(state: Any, host: Any, timeout: float, label: str, digest: str | None = None) -> bool:
    """FunctionCommand body: wait (cluster time); when only deleting pods helps and the policy allows it, delete them
    — the pods that are not Ready first, then the Ready ones one at a time, highest ordinal first, each once every
    other pod is Ready on the update revision, so the set never drops more serving pods than a RollingUpdate would;
    never onto a template other than this run's (``digest``: the one the plan read, when this run wrote none). A
    crash loop it fails on is recorded on that pod's ControllerRevision."""
    try:
        ctx = k8s_host(host)
        clock = ClusterClock(ctx.client)
        start = clock.now()
        wrote = wrote_in_this_run(state, host, ctx.deployment_path)
        expected: str | None = None
        # a probe-less vLLM pod is Ready when it starts: it must also serve (kube.serving), in every pass
        gate = ServingGate(ctx.client.live(), ctx.namespace, ctx.container)
        while True:  # each pass deletes pods or waits for replacements; the waits end at ``timeout``
            left = max(timeout - (clock.now() - start), 0.0)
            result = wait_for_sts_rollout(ctx.client, ctx.namespace, ctx.deployment, timeout=left, clock=clock,
                                          gate=gate)
            if result.outcome == BLOCKED:
                sts, pods = read_set(ctx.client, ctx.namespace, ctx.deployment)
                if foreign_update(sts, ctx.keys.last_action_template):  # a template we did not write
                    if wrote:
                        raise UserError(
                            f"{ctx.where} edited after this run's write: not deleting pods for a "
                            "revision this run did not show"
                        )
                    note(host, f"{label}: {foreign_line(ctx.where, stuck_pods(sts, pods))}")
                    return True
            if result.outcome != BLOCKED or ctx.policy.restore.delete_pods != "blocking":
                break
            expected = expected or _expected(ctx, wrote, digest)
            deleted = _delete_next(host, label, expected, wrote)
            sts, pods = read_set(ctx.client, ctx.namespace, ctx.deployment)
            if not _on_delete(sts):
                if not deleted:
                    break  # blocked, and nothing to delete: say so
            else:
                rest = [n for n in stuck_pods(sts, pods) if n not in deleted]
                if deleted and rest:
                    note(host, f"{label}: next {', '.join(rest)}, once every other pod is Ready on the update revision")
                # the controller replaces no pod by itself: wait for each replacement, failing fast, before the next
                left = max(timeout - (clock.now() - start), 0.0)
                result = wait_for_replacements(ctx.client, ctx.namespace, ctx.deployment, timeout=left, clock=clock,
                                               gate=gate)
                if not result.ok:
                    break
        elapsed = clock.now() - start  # the whole wait, deletions and replacements included
    except UserError as exc:
        note(host, f"{label}: {exc}", error=True)
        return False
    if result.ok:
        note(host, f"{label}: {result.message.strip()} after {elapsed:.0f}s (cluster time)")
        return True
    tail = " (policy restore.delete_pods: never)" if result.outcome == BLOCKED else ""
    note(host, f"{label}: {result.outcome} after {elapsed:.0f}s: {result.message}{tail}", error=True)
    if result.crash is not None and result.outcome == "crash-loop":
        said = record_wait_crash(ctx, result.crash.pod, result.crash.failure)
        if said:
            note(host, f"{label}: {said}", error=said.startswith("warning"))
    return False
