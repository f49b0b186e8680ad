"""Runbook step 6 for a StatefulSet or a LeaderWorkerSet: wait for its rollout, confirm, mark the ControllerRevision.

Why the ControllerRevision: it is the set's revision, as the ReplicaSet is a Deployment's. Restore reads a set's
history from its ControllerRevisions (``facts.statefulset`` / ``facts.leaderworkerset``: a row's ``known_good`` is
the mark's annotation there) and chooses with the Deployment's rules (``remedies.restore.decide_restore``), a
known-good mark first; the controller keeps the object, and so the mark, when a rollback renumbers it. The checks
and the guarded write are the Deployment's (``operations.confirm.judge`` / ``mark``); what this module adds is
where the set's pods, template and rollout come from. An LWS group is one engine: its leaders run ``vllm serve``
(concurrency, ``/metrics``), its workers only have to be Ready and stable too.

    from vllm_remedy.operations import set_confirm

    set_confirm.rolled_out(name="Wait until the new pods are Ready")
    set_confirm.marked_known_good(name="Confirm and mark the running revision known-good")
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from pyinfra import host, state
from pyinfra.api import FunctionCommand, operation

from vllm_remedy.operations import confirm, leaderworkerset, set_reads, sts_unblock
from vllm_remedy.operations.util import k8s_host, keeps_its_plan, noop
from vllm_remedy.remedies.confirm import format_duration_s
from vllm_remedy.remedies.restore import crash_looping, ready_for


def rolled_out_now(rows: Mapping[str, Any]) -> bool:
    """Every live pod is of the current revision and Ready (pure): nothing to wait for."""
    live = [p for p in rows.get("pods") or [] if not p.get("deleting")]
    return bool(live) and all(p.get("new") and p.get("ready") for p in live)


@operation()
def rolled_out(timeout: float | None = None) -> Iterator[FunctionCommand]:
    """
    The set is rolled out and its pods are Ready; waits (cluster time) with the kind's own wait if not.

    + timeout: cluster seconds to wait; default the policy's ``restore.rollout_timeout``

    A StatefulSet's wait (``sts_unblock.wait_and_unblock``) deletes pods the controller will never replace only when
    the policy's ``restore.delete_pods`` is ``blocking``; an LWS's (``leaderworkerset.wait_rolled_out``) waits for
    every group. Both fail fast on a crash loop, recorded on that revision. Nothing happens when already rolled out.
    """
    ctx = k8s_host(host)
    facts = host.get_fact(set_reads.state_fact(ctx.kind))
    if facts is None:
        return  # pyinfra already failed the host with the fact's error
    if rolled_out_now(facts["pod_rows"]):
        noop(state, host, f"{ctx.where} is rolled out")
        return
    seconds = timeout if timeout is not None else ctx.policy.restore.rollout_timeout.total_seconds()
    wait = sts_unblock.wait_and_unblock if ctx.kind == set_reads.STATEFULSET else leaderworkerset.wait_rolled_out
    yield FunctionCommand(wait, (seconds, f"wait for {ctx.where} to roll out"), {})


def worker_checks(rows: Mapping[str, Any], leaders: set[str], now: float, stable: float) -> list[tuple[bool, str]]:
    """An LWS's worker pods as step 6 checks (pure): each of the current revision, Ready, not crash-looping and
    Ready for ``stable`` seconds (cluster time) — a group serves only while all its pods do."""
    out = []
    for pod in rows.get("pods") or []:
        if pod.get("deleting") or pod["name"] in leaders:
            continue
        if not pod.get("new"):
            out.append((False, f"worker pod {pod['name']}: of an old revision ({pod.get('revision')})"))
            continue
        looping = any(crash_looping(c) for c in pod.get("containers") or [])
        ready = ready_for(pod, now) or 0.0
        out.append((bool(pod.get("ready")) and not looping and ready >= stable,
                    f"worker pod {pod['name']}: Ready for {format_duration_s(ready)} of the required "
                    f"{format_duration_s(stable)}" + (", crash-looping" if looping else "")
                    + ("" if pod.get("ready") else ", not Ready")))
    return out


@operation()
@keeps_its_plan
def marked_known_good() -> Iterator[FunctionCommand]:
    """
    Confirm the set's running revision (runbook step 6) and mark its ControllerRevision known-good.

    The Deployment's checks (``operations.confirm.marked_known_good``) over the set's pods — for an LWS its leaders,
    with every worker Ready and stable besides. The host fails with the reasons when a check fails; nothing is
    written then. A revision already marked is left as it is; the mark is a guarded patch of the
    ControllerRevision's annotations (an edit since it was read refuses it).
    """
    ctx = k8s_host(host)
    facts = host.get_fact(set_reads.state_fact(ctx.kind))
    if facts is None:
        return  # pyinfra already failed the host with the fact's error
    rows = set_reads.pods_with_logs(ctx, facts, ctx.kind)
    checks: list[tuple[bool, str]] = []
    if ctx.kind == set_reads.LEADERWORKERSET:
        leaders = set_reads.leaders(facts)
        checks = worker_checks(rows, leaders, ctx.client.server_time(), ctx.policy.confirm.stable_for.total_seconds())
        rows = set_reads.with_totals({**rows, "pods": [p for p in rows["pods"] if p["name"] in leaders]})
    result = confirm.judge(ctx, facts["rollout"], rows, set_reads.workload(facts, ctx.kind),
                           set_reads.template(facts, ctx.kind), checks)
    yield from confirm.mark(ctx, result, "controllerrevisions", None)
