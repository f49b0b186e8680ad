"""Runbook step 1 for a StatefulSet: a crash-looping revision rolled back as ``kubectl rollout undo sts/…`` does,
then waited for — and, where the controller will never replace a pod by itself, that said, and the pod deleted
only when the policy allows it (``restore.delete_pods: blocking``).

Why a StatefulSet needs more than the undo: under the default ``OrderedReady`` policy the controller does not
move past a pod that is not Running and Ready, so the crash-looping pod of the bad revision keeps the rollback
from ever reaching it (the Kubernetes docs' "forced rollback"); under ``OnDelete`` no pod changes until it is
deleted. The write is kubectl's (``spec.template`` back to the revision's, guarded by resourceVersion); the
revision history is the ControllerRevisions' (:mod:`vllm_remedy.kube.sts_history`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pyinfra import host, state
from pyinfra.api import FunctionCommand, operation

from vllm_remedy.errors import UserError
from vllm_remedy.facts.statefulset import StatefulSetState
from vllm_remedy.kube import sts_history
from vllm_remedy.kube.client import KubeClient
from vllm_remedy.kube.clock import ClusterClock
from vllm_remedy.kube.diff import unified_template_diff
from vllm_remedy.kube.health import pod_health
from vllm_remedy.kube.selectors import selector_string
from vllm_remedy.kube.sts_wait import BLOCKED, read_set, stuck_pods, wait_for_sts_rollout
from vllm_remedy.kube.wait import RESTART_LIMIT, crashing_container
from vllm_remedy.operations.util import k8s_host, noop, observe, refuse, show, write_command
from vllm_remedy.operations.util.show import note


def _path(namespace: str, name: str) -> str:
    return KubeClient.object_path(namespace, "statefulsets", name)


def _undo_ops(client: KubeClient, basis: dict[str, Any], at: float) -> list[dict[str, Any]]:
    """kubectl's undo planned on ``basis`` against the ControllerRevisions read now; [] when already in place."""
    meta = basis["metadata"]
    selector = selector_string((basis.get("spec") or {}).get("selector"))
    revisions = client.request("GET", client.object_path(meta["namespace"], "controllerrevisions"),
                               query=[("labelSelector", selector)] if selector else [])
    plan = sts_history.plan_undo(basis, list(revisions.get("items") or []))
    return [] if plan.skipped else plan.patch


def _strategy_line(sts: dict[str, Any], delete_pods: str) -> str:
    spec = sts.get("spec") or {}
    if (spec.get("updateStrategy") or {}).get("type") == "OnDelete":
        how = "updateStrategy OnDelete: the rollback reaches a pod only when it is deleted"
    elif spec.get("podManagementPolicy", "OrderedReady") == "OrderedReady":
        how = ("podManagementPolicy OrderedReady: a crash-looping pod of the bad revision blocks the rollback until "
               "it is deleted")
    else:
        return "podManagementPolicy Parallel: the controller replaces the bad revision's pods itself"
    act = ("such pods are deleted (policy restore.delete_pods: blocking)" if delete_pods == "blocking"
           else "such pods are named, not deleted (policy restore.delete_pods: never)")
    return f"then: {how}; {act}"


@operation()
def rollback(wait: bool = True, timeout: float | None = None) -> Iterator[FunctionCommand]:
    """
    Roll a crash-looping StatefulSet back to its previous revision and wait until it is Ready.

    + wait: wait for the rollout, failing fast on a crash loop; pods the controller will not replace by itself are
      deleted when the policy's ``restore.delete_pods`` is ``blocking``, else named and the host fails
    + timeout: cluster seconds to wait; default the policy's ``restore.rollout_timeout``

    Nothing happens when no pod of the set's update revision is crash-looping.
    """
    ctx = k8s_host(host)
    facts = host.get_fact(StatefulSetState)
    sts, revisions, pods = facts["statefulset"], facts["revisions"], facts["pods"]
    where = f"statefulset {ctx.namespace}/{ctx.deployment}"
    update = str((sts.get("status") or {}).get("updateRevision") or "")
    crashing = sorted(p["metadata"]["name"] for p in pods
                      if (p["metadata"].get("labels") or {}).get(sts_history.REVISION_LABEL) == update
                      and crashing_container(pod_health(p), RESTART_LIMIT))
    if not crashing:
        stuck = stuck_pods(sts, pods)
        if stuck and wait:  # a rollback written earlier that only deleting pods can finish (a re-run)
            show(state, host, [f"{where}: pods {', '.join(stuck)} stay on another revision until deleted",
                               _strategy_line(sts, ctx.policy.restore.delete_pods)])
            seconds = timeout if timeout is not None else ctx.policy.restore.rollout_timeout.total_seconds()
            yield FunctionCommand(wait_and_unblock, (seconds, f"finish the rollout of {where}"), {})
            return
        noop(state, host, f"nothing to restore: no pod of {where}'s current revision is crash-looping")
        return
    try:
        plan = sts_history.plan_undo(sts, revisions)
    except UserError as exc:
        yield from refuse(state, host, f"{where}: pods {', '.join(crashing)} crash-loop and {exc}")
        return
    if plan.skipped:
        noop(state, host, f"{where} already has revision {plan.revision}'s template")
        return
    current = next((r.number for r in sts_history.sts_history(sts, revisions) if r.current), 0)
    summary = (f"roll back {where} from revision {current} to revision {plan.revision} ({plan.controller_revision}) "
               f"— pods {', '.join(crashing)} crash-loop")
    path = _path(ctx.namespace, ctx.deployment)
    observe(state, host, path, sts)
    before = (sts.get("spec") or {}).get("template") or {}
    show(state, host, [summary, unified_template_diff(before, plan.template).rstrip("\n"),
                       _strategy_line(sts, ctx.policy.restore.delete_pods)])
    yield write_command(path, _undo_ops, summary)
    if wait:
        seconds = timeout if timeout is not None else ctx.policy.restore.rollout_timeout.total_seconds()
        yield FunctionCommand(wait_and_unblock, (seconds, f"wait for revision {plan.revision} to roll out"), {})


def wait_and_unblock(state: Any, host: Any, timeout: float, label: str) -> bool:
    """FunctionCommand body: wait (cluster time); when only deleting pods helps, delete them if the policy allows."""
    try:
        ctx = k8s_host(host)
        clock = ClusterClock(ctx.client)
        result = wait_for_sts_rollout(ctx.client, ctx.namespace, ctx.deployment, timeout=timeout, clock=clock)
        if result.outcome == BLOCKED and ctx.policy.restore.delete_pods == "blocking":
            sts, pods = read_set(ctx.client, ctx.namespace, ctx.deployment)
            for name in stuck_pods(sts, pods):
                ctx.client.request("DELETE", KubeClient.object_path(ctx.namespace, "pods", name, group="v1"))
                note(host, f"{label}: deleted pod {name} (policy restore.delete_pods: blocking)")
            result = wait_for_sts_rollout(ctx.client, ctx.namespace, ctx.deployment, timeout=timeout, clock=clock)
    except UserError as exc:
        note(host, f"{label}: {exc}", error=True)
        return False
    if result.ok:
        note(host, f"{label}: {result.message.strip()} after {result.elapsed:.0f}s (cluster time)")
        return True
    tail = " (policy restore.delete_pods: never)" if result.outcome == BLOCKED else ""
    note(host, f"{label}: {result.outcome} after {result.elapsed:.0f}s: {result.message}{tail}", error=True)
    return False
