"""Runbook step 4's stop-gap on a LeaderWorkerSet: ``--enforce-eager`` as a timed toggle, and its revert.

The Deployment's semantics (``operations.enforce_eager``, ``workload.revert_expired_toggles``), on the LWS: the
expiry (cluster time, stamped at the write) and the leader container's exact prior argv are annotations of the
LeaderWorkerSet; the flag goes on and off in the leader's command line and — when they run vLLM flags too — the
workers' (``remedies.lws_flags``), in one guarded write of ``spec.leaderWorkerTemplate``. Any later run of an LWS
deploy reverts an expired toggle (or one whose expiry is beyond the policy's ``enforce_eager.max_duration``): the
exact prior argv only where it is the running leader container without the flag, token for token
(``remedies.enforce_eager.revert``), else the flag alone; never into a start predicted to fail.

    from vllm_remedy.operations import lws_eager

    lws_eager.revert_expired_toggles(name="Revert expired temporary toggles")
    lws_eager.toggle(name="Temporary eager mode", enabled=True, ttl="2h")
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

from pyinfra import host, state
from pyinfra.api import FunctionCommand, operation

from vllm_remedy.errors import UserError
from vllm_remedy.kube import lws_history
from vllm_remedy.operations.enforce_eager import EAGER_OFF, _toggle_record, already_on, warn_malformed
from vllm_remedy.operations.leaderworkerset import wait_rolled_out
from vllm_remedy.operations.lws_flags import LwsView, failing, planned_lwt, refuse_failing, view, write_lwt
from vllm_remedy.operations.util import k8s_host, keeps_its_plan, noop, refuse, server_of, with_flags
from vllm_remedy.operations.workload import EXPIRE, KEPT
from vllm_remedy.policy import format_duration
from vllm_remedy.remedies import enforce_eager as toggles


def _where() -> str:
    return k8s_host(host).where


def _one_line(exc: UserError) -> str:
    """A refusal naming the set first (a namespace host's deploys refuse each kind by name)."""
    where = _where()
    return str(exc) if str(exc).startswith(where) else f"{where}: {exc}; nothing was changed"


@operation()
@keeps_its_plan
def revert_expired_toggles(wait: bool = False) -> Iterator[FunctionCommand]:
    """
    Revert every temporary toggle on the LeaderWorkerSet whose expiry (cluster time) has passed, or lies beyond the
    policy's ``enforce_eager.max_duration`` from now — every LWS deploy runs this, after any operation that plans on
    the set as read (``lws_pin.gpu_product``, ``leaderworkerset.rollback``) so that --dry's diffs are the run's.

    The leader's exact prior argv comes back only where it is its running container without the toggled flag;
    otherwise the flag alone comes off (leader and workers), the line saying why. When the memory model predicts the
    group will not start without it, nothing is written and the line says so (drift reports it until the budget is
    fixed). An unreadable record is one warning line and left in place.

    + wait: after a write, wait until every group is Ready on the reverted template (a deploy with no wait of its own
      after this one, such as restore's)
    """
    yield from reverted(wait)


def reverted(wait: bool = False) -> Iterator[FunctionCommand]:
    """:func:`revert_expired_toggles`'s body, for an operation that reverts only when no later write of its deploy
    takes the revert in (``lws_budget.revert_unless_fixed``)."""
    try:
        got = view()
        ctx = got.ctx
        warn_malformed(state, host, toggles.malformed(ctx.keys, got.notes))
        due, leader, drops, said = _reverts(got)
        new = planned_lwt(got, leader) if due else None
    except UserError as exc:
        yield from refuse(state, host, _one_line(exc))
        return
    if new is None:
        noop(state, host, "no temporary toggle has expired")
        return
    why = failing(got, new)
    if why is not None:
        names = ", ".join(f"{t.name} (expired {t.expires})" for t in due)
        noop(state, host, f"{KEPT}{names} on {ctx.where}: without it {why}; fix the budget first (deploys/budget.py)"
             " - drift and the expiry alert report it until then")
        return
    yield from write_lwt(got, new, action=EXPIRE, reason="; ".join(said), annotations=drops,
                         summary=f"revert expired toggles on {ctx.where}: {'; '.join(said)}")
    if wait and not lws_history.lwts_equal(new, got.lwt):
        seconds = ctx.policy.restore.rollout_timeout.total_seconds()
        yield FunctionCommand(wait_rolled_out, (seconds, f"wait for {ctx.where} to roll out without the toggle"), {})


def due_revert(got: LwsView) -> tuple[LwsView, dict[str, str | None], list[str]]:
    """The set as reverting its due toggles would leave it — the view to plan on, the record's annotations to drop
    and what each revert does — for a write that takes the revert in (one write, not a revert and then a change);
    ``got`` itself, {} and [] when none is due or the group is predicted not to start without it (then
    :func:`revert_expired_toggles` keeps it and says why)."""
    due, leader, drops, said = _reverts(got)
    if not due:
        return got, {}, []
    new = planned_lwt(got, leader)
    if failing(got, new) is not None:
        return got, {}, []
    notes = {k: v for k, v in got.notes.items() if k not in drops}
    lws = {**got.lws, "metadata": {**(got.lws.get("metadata") or {}), "annotations": notes},
           "spec": {**(got.lws.get("spec") or {}), "leaderWorkerTemplate": new}}
    return LwsView(got.ctx, got.path, lws, new), drops, said


def _reverts(got: LwsView) -> tuple[list[Any], dict[str, Any], dict[str, str | None], list[str]]:
    """(the toggles due now, the leader with them reverted, their record's annotations to drop, what each revert
    does): the one reading of expiry both the revert and a write taking it in use."""
    ctx = got.ctx
    now, limit = ctx.client.server_time(), ctx.policy.enforce_eager.max_duration.total_seconds()
    due = toggles.expired(ctx.keys, got.notes, now, limit)
    leader, drops, said = got.leader, {}, []
    for record in due:
        undo = toggles.revert(leader, ctx.keys, record, ctx.container, toggles.due(record, now, limit))
        leader = undo.template
        drops.update(undo.annotations)
        said.append(f"{record.name}: {undo.message}")
    return list(due), leader, drops, said


def _is_on(got: LwsView) -> bool:
    return server_of(got.leader, got.ctx.container).flags.get("enforce-eager", "false") not in ("false", "False", "0")


@operation()
@keeps_its_plan
def toggle(enabled: bool = True, ttl: str | int | None = None) -> Iterator[FunctionCommand]:
    """
    ``--enforce-eager`` on a LeaderWorkerSet as a timed toggle: on for at most ``ttl``, then any later run reverts it.

    + enabled: True turns eager mode on (if it is off); False takes it off now (refused when the group is predicted
      not to start without it)
    + ttl: how long it may stay on; default and maximum the policy's ``enforce_eager.max_duration``

    An existing toggle is never extended; one already due comes off in this run's first operation and goes on anew.
    """
    try:
        got = view()
        ctx = got.ctx
        notes = got.notes
        record = toggles.active(ctx.keys, notes)
        unreadable = {k: None for b in toggles.malformed(ctx.keys, notes) if b.name == toggles.EAGER for k in b.keys}
        is_on = _is_on(got)
        seconds = 0
        if enabled:
            seconds = toggles.ttl_seconds(ttl, ctx.policy)
            if (on := already_on(ctx.where, is_on, record, unreadable)) is not None:
                noop(state, host, on)
                return
            base = with_flags(got.leader, unset=["enforce-eager"], container=ctx.container) if is_on else got.leader
            leader, annotations = toggles.switch_on(base, ctx.keys, ctx.client.server_time(), seconds, ctx.container)
            new = planned_lwt(got, leader)
        elif record is not None:
            undo = toggles.revert(got.leader, ctx.keys, record, ctx.container)
            new, annotations = planned_lwt(got, undo.template), dict(undo.annotations)
        elif is_on or unreadable:
            leader = with_flags(got.leader, unset=["enforce-eager"], container=ctx.container)
            new, annotations = planned_lwt(got, leader), dict(unreadable)
        else:
            noop(state, host, f"--enforce-eager is off on {ctx.where}")
            return
    except UserError as exc:
        yield from refuse(state, host, _one_line(exc))
        return
    why = refuse_failing(got, new, "--enforce-eager " + ("on" if enabled else "off"))
    if why is not None:
        yield from refuse(state, host, why + ("" if enabled else "; fix the budget first (deploys/budget.py)"))
        return
    if not enabled:
        yield from write_lwt(got, new, action=EAGER_OFF, reason="--enforce-eager off", annotations=annotations,
                             summary=f"turn off --enforce-eager on {ctx.where}, leader and workers")
        return
    expires = annotations[ctx.keys.toggle_expires(toggles.EAGER)]
    stamp = functools.partial(_toggle_record, toggles.argv_record(base, ctx.container), seconds, ctx.keys)
    summary = f"turn on --enforce-eager on {ctx.where}, leader and workers, for {format_duration(seconds)}"
    yield from write_lwt(got, new, action="enforce-eager", reason="--enforce-eager (temporary)", stamp=stamp,
                         summary=summary, lines=(f"until about {expires}",))
