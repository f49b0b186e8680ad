"""Wait for a restored revision in cluster time, failing fast when its pods crash-loop.

``kube.wait.wait_for_rollout`` gives up as soon as the Deployment says ProgressDeadlineExceeded. Right
after a rollback that verdict is usually the crash-looping revision's (the controller keeps it until the
restored ReplicaSet makes progress; the rehearsal cluster even keeps counting the deadline across the
rollback). Our bound is the policy's ``restore.rollout_timeout``; while it lasts, a deadline only means
"look at the new pods ourselves" — a crash loop there still fails fast, with the classified log, and so
does a new pod the scheduler cannot place, with the scheduler's reason.
"""

from __future__ import annotations

from vllm_remedy.kube.health import pod_health
from vllm_remedy.kube.selectors import selector_string
from vllm_remedy.kube.wait import Clock, Crash, WaitResult, crash_report, crashing_container, new_pods, wait_for_rollout
from vllm_remedy.operations._context import K8sHost

#: Failed restarts of a restored pod that count as a crash loop (as kube.wait counts them).
RESTART_LIMIT = 3


def crash_now(ctx: K8sHost, restart_limit: int = RESTART_LIMIT) -> Crash | None:
    """The first crash-looping container of the Deployment's new ReplicaSet, with its classified log; else a
    new pod the scheduler cannot place, with its reason (past the progress deadline no grace is due)."""
    client = ctx.client
    deployment = client.get_deployment(ctx.namespace, ctx.deployment)
    selector = selector_string((deployment.get("spec") or {}).get("selector"))
    pods = new_pods(deployment, client.list_replicasets(ctx.namespace, selector),
                    client.list_pods(ctx.namespace, selector))
    for pod in pods:
        health = pod_health(pod)
        bad = crashing_container(health, restart_limit)
        if bad is None:
            continue
        return crash_report(client, ctx.namespace, health, bad)
    for pod in pods:
        health = pod_health(pod)
        if health.unschedulable:
            return Crash(pod=health.name, kind="unschedulable",
                         message=f"pod {health.name}: Unschedulable: {health.unschedulable}")
    return None


def wait_restored(ctx: K8sHost, timeout: float, clock: Clock, interval: float = 2.0) -> WaitResult:
    """Rolled out and Ready within ``timeout`` cluster seconds, or why not (see the module docstring)."""
    start = clock.now()
    while True:
        remaining = timeout - (clock.now() - start)
        result = wait_for_rollout(ctx.client, ctx.namespace, ctx.deployment, timeout=max(remaining, 0.0),
                                  clock=clock, interval=interval)
        if result.outcome != "progress-deadline":
            break
        crash = crash_now(ctx)
        if crash is not None:
            result = WaitResult(False, crash.kind, crash.message, 0.0, crash, result.statuses)
            break
        if clock.now() - start >= timeout:
            result = WaitResult(False, "timeout", f'timed out waiting for deployment "{ctx.deployment}": '
                                f"{result.message}", 0.0, None, result.statuses)
            break
        clock.sleep(interval)
    result.elapsed = clock.now() - start
    return result
