"""Runbook step 4's warning made safe: ``--enforce-eager`` only as a *timed* toggle that reverts itself.

Turning it on records the expiry (cluster time, counted from the write) and the container's exact prior argv
on the Deployment (``remedies.enforce_eager``); ``workload.revert_expired_toggles``, which every deploy runs
first, takes it off after that — restoring that argv only where it is the running
container without the flag, token for token (no spelling of the flag in it); an expiry beyond the policy's
``enforce_eager.max_duration`` counts as expired. An unreadable record of this toggle is warned about
once and replaced (on) or dropped (off) — the eager deploy is the one that owns it. A flag already in the template
with no record of ours is a person's: turning eager mode on is then a noop saying so, never a toggle that would
record an argv that never ran and take their flag away at its expiry. Turning it on or off on a full pool switches
the rollout to ``maxSurge: 0`` in the same write, as the pin does (``pin_gpu.surge_switch_for``): the surge pod of the
default RollingUpdate would never schedule, and the toggle would never reach a pod. That switch is part of the toggle:
recorded with its prior argv and put back with it (off, or at expiry) while the strategy is still the one written;
and refused, unless the run consents (``--data override=capacity``), where it would stop every serving pod first.

    from vllm_remedy.operations import enforce_eager

    enforce_eager.toggle(name="Temporary eager mode", enabled=True, ttl="2h")
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Iterator, Mapping
from typing import Any

from pyinfra import host, logger, state
from pyinfra.api import FunctionCommand, operation

from vllm_remedy.errors import UserError
from vllm_remedy.kube.annotations import Keys, Malformed, Toggle, action_annotations, rfc3339
from vllm_remedy.kube.history import template_of
from vllm_remedy.operations import pin_gpu
from vllm_remedy.operations.util import (
    Change,
    K8sHost,
    change_command,
    change_lines,
    deployment_object,
    k8s_host,
    keeps_its_plan,
    noop,
    observe,
    refuse,
    server_of,
    show,
    with_flags,
)
from vllm_remedy.policy import format_duration
from vllm_remedy.remedies import enforce_eager as toggles
from vllm_remedy.remedies.pin_gpu import SURGE_REASON
from vllm_remedy.remedies.predict import failed_prediction, predict_template

EAGER_ON, EAGER_OFF = "enforce-eager", "enforce-eager-off"
_WARNED: set[tuple[int, str, str]] = set()


def warn_malformed(state: Any, host: Any, bad: list[Malformed]) -> None:
    """One warning line per unreadable toggle record, per run and host (pyinfra runs a body twice, and every
    deploy's first operation and the eager toggle both read the record)."""
    run = id(getattr(host, "state", None) or state)
    for record in bad:
        key = (run, str(host.name), record.problem)
        if key not in _WARNED:
            _WARNED.add(key)
            logger.warning(f"{host.print_prefix}{toggles.malformed_warning(record)}")


def _record(ctx: K8sHost, deployment: Mapping[str, Any]) -> tuple[Toggle | None, dict[str, None]]:
    """The eager toggle's record, and the keys of an unreadable one (warned about) that a write replaces."""
    notes = (deployment.get("metadata") or {}).get("annotations") or {}
    bad = toggles.malformed(ctx.keys, notes)
    warn_malformed(state, host, bad)
    unreadable = {k: None for b in bad if b.name == toggles.EAGER for k in b.keys}
    return toggles.active(ctx.keys, notes), unreadable


@operation()
@keeps_its_plan
def toggle(enabled: bool = True, ttl: str | int | None = None) -> Iterator[FunctionCommand]:
    """
    ``--enforce-eager`` as a timed toggle: on for at most ``ttl``, then any later run reverts it.

    + enabled: True turns eager mode on (if it is off); False takes it off now, restoring the prior argv (refused,
      like any write, when the memory model predicts the server will not start without it)
    + ttl: how long it may stay on (``"30m"``, ``"2h"``; seconds as int); default and maximum is the
      policy's ``enforce_eager.max_duration`` — a longer ttl is refused

    Turning it on records the expiry (RFC 3339, cluster time) and the container's exact prior
    ``command``/``args`` as annotations; an existing toggle is never extended. Eager mode disables CUDA
    graphs: less memory, less throughput — a stop-gap while the real fix (budget, GPU) is found.

    **Examples:**

    .. code:: python

        enforce_eager.toggle(name="Temporary eager mode", enabled=True, ttl="2h")
        enforce_eager.toggle(name="Eager mode off", enabled=False)
    """
    ctx = k8s_host(host)
    deployment = deployment_object(host)
    template = template_of(deployment)
    seconds, base, again = 0, template, ""
    try:
        record, unreadable = _record(ctx, deployment)
        running = server_of(template, ctx.container).flags
        is_on = running.get("enforce-eager", "false") not in ("false", "False", "0")
        if enabled:
            seconds = toggles.ttl_seconds(ttl, ctx.policy)
            now = ctx.client.server_time()
            limit = ctx.policy.enforce_eager.max_duration.total_seconds()
            if is_on and record is not None and (why_due := toggles.due(record, now, limit)) is not None:
                # this run's revert_expired_toggles takes it off first (also a forged far-future expiry); then it
                # goes on anew (planned from the reverted argv, so --dry shows what -y does) - never extended
                again = f" again (the last {'' if record.expired(now) else 'toggle: '}{why_due})"
                base = toggles.revert(template, ctx.keys, record, ctx.container).template
            elif (on := already_on(ctx.where, is_on, record, unreadable)) is not None:
                noop(state, host, on)
                return
            else:
                base = with_flags(template, unset=["enforce-eager"], container=ctx.container) if is_on else template
            planned, notes = toggles.switch_on(base, ctx.keys, now, seconds, ctx.container)
        elif record is not None:
            undo = toggles.revert(template, ctx.keys, record, ctx.container)
            planned, notes = undo.template, dict(undo.annotations)
        elif is_on or unreadable:
            planned, notes = with_flags(template, unset=["enforce-eager"], container=ctx.container), unreadable
        else:
            noop(state, host, f"--enforce-eager is off on {ctx.where}")
            return
    except UserError as exc:
        yield from refuse(state, host, f"{ctx.where}: {exc}")
        return
    prediction = predict_template(planned, ctx.container)
    why = failed_prediction(prediction)
    if not enabled and why is not None:
        yield from refuse(state, host, f"--enforce-eager off on {ctx.where}: without it {why}; fix the budget first "
                          "(deploys/budget.py)")
        return
    if not enabled:
        back, kept = (None, None) if record is None else toggles.strategy_back(record, strategy_of(deployment))
        yield from pin_gpu.set_template_on_pool(state, host, deployment, planned, action=EAGER_OFF,
                                                prediction=prediction, reason="--enforce-eager off",
                                                summary=f"turn off --enforce-eager on {ctx.where}"
                                                + (f" ({kept})" if kept else ""), annotations=notes,
                                                strategy_back=back)
        return
    if why is not None:
        yield from refuse(state, host, f"--enforce-eager on {ctx.where}: {why}")
        return
    summary = f"turn on --enforce-eager{again} on {ctx.where} for {format_duration(seconds)}"
    switch = pin_gpu.surge_switch_for(ctx, deployment, planned)
    if (outage := pin_gpu.outage_refused(switch)) is not None:
        yield from refuse(state, host, f"--enforce-eager on {ctx.where}: {outage}")
        return
    prior = toggles.argv_record(base, ctx.container)
    if switch is not None:
        prior = toggles.with_strategy(prior, switch.current, switch.strategy)
    elif again and record is not None and (back := toggles.strategy_back(record, strategy_of(deployment))[0]):
        # the expired toggle's switch is still the Deployment's: the new toggle reverts it in its turn
        prior = toggles.with_strategy(prior, back, strategy_of(deployment))
    observe(state, host, ctx.deployment_path, deployment)
    show(state, host, [*change_lines(ctx, f"{summary} (until about {notes[ctx.keys.toggle_expires(toggles.EAGER)]})",
                                     template, planned, prediction),
                       *pin_gpu.strategy_diff(ctx, deployment, switch and switch.strategy),
                       *([switch.line] if switch else [])])
    stamp = functools.partial(_toggle_record, prior, seconds, ctx.keys,
                              switched=switch is not None)
    yield change_command(ctx, ctx.deployment_path,
                         Change(spec={"template": copy.deepcopy(planned), **pin_gpu.switch_spec(switch)},
                                stamp=stamp), summary)


def strategy_of(deployment: Mapping[str, Any]) -> dict[str, Any]:
    """The Deployment's rollout strategy as read (what a toggle's strategy record is compared with)."""
    return dict((deployment.get("spec") or {}).get("strategy") or {})


def already_on(where: str, is_on: bool, record: Any, unreadable: Mapping[str, Any]) -> str | None:
    """The noop line when eager mode is on already and nothing is to be timed, else None: our toggle runs (never
    extended), or a person set the flag — no record of ours, so nothing of ours to time (a toggle recorded over it
    would store an argv that never ran, and its revert would take their flag away)."""
    if not is_on:
        return None
    if record is not None:
        return f"--enforce-eager is already on for {where} until {record.expires} (a toggle is never extended)"
    if not unreadable:
        return f"--enforce-eager is already on in {where} and not a toggle of ours: nothing to time"
    return None


def _toggle_record(prior: dict[str, Any], seconds: int, keys: Keys, at: float, switched: bool = False
                   ) -> dict[str, str]:
    """The toggle's annotations, stamped at the write itself (cluster time ``at``): a prompt left open for ten
    minutes does not shorten the toggle. They replace any unreadable record of it (same keys). ``switched``: the
    write also sets maxSurge 0 (a full pool), which the reason says as the pin's does."""
    expires = rfc3339(at + seconds)
    reason = f"--enforce-eager until {expires} (temporary; reverts on the next run after)"
    return {**action_annotations(keys, EAGER_ON, f"{reason}; {SURGE_REASON}" if switched else reason, at),
            **toggles.record(keys, expires, prior)}
