"""The plan the operator approved is the plan that runs, or the host fails saying why.

pyinfra runs an operation body twice: once to detect changes (what ``--dry`` and the prompt show) and
again at execute, on fresh facts. If someone edits the Deployment at the prompt, the second run may find
nothing to do (a rollback no longer "needed" because the new revision has not crash-looped yet) and
pyinfra would report "No changes" - an approved rollback silently dropped. A body wrapped in
``keeps_its_plan`` that planned a change but yields nothing at execute checks whether the Deployment was
edited by someone else since it was read; if so the host fails with one line instead.

The second run may also find a *different* change: a crash record written on the target's ReplicaSet at the
prompt moves a rollback to an older revision, while the Deployment, which the write's guard tests, is unchanged.
A refusal is no change: while detecting, a body that refuses (``refuse``, or a write the policy's GitOps stance
refuses) yields nothing and its host's later operations are not planned (``refusal``), so ``--dry`` and the prompt
show the refusal once and count nothing for it or after it, as ``-y`` changes nothing there. Every refusal also
marks the host failed (``refusal.record``), so ``--dry`` exits 1 as the run will (under pyinfra's CLI; drift reports
refusals itself).
An approved plan that stops at a refusal stops there at execute too, even if the body would no longer refuse.

So the writes a body planned are remembered by what they say they do (their summary up to " — ", the part
that names the object and the change, not why), and a body that would write something else at execute fails
the host with both, and writes nothing.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from pyinfra.api import FunctionCommand
from pyinfra.context import ctx_host, ctx_state

from vllm_remedy.errors import UserError
from vllm_remedy.operations.util import refusal
from vllm_remedy.operations.util.context import k8s_host
from vllm_remedy.operations.util.write import changed_since, fail, refused, run_id, run_write, written_in_this_run

Body = TypeVar("Body", bound=Callable[..., Iterator[Any]])

#: (run, host, operation hash) of every body run while changes were detected -> the writes it planned.
_PLANNED: dict[tuple[int, str, str], tuple[str, ...]] = {}
#: The same key of a body refused while changes were detected -> the refusal's reason.
_REFUSED_PLANS: dict[tuple[int, str, str], str] = {}
#: The same key of a body that writes only what was approved (``approved_plan``) -> the writes it showed then.
_APPROVED: dict[tuple[int, str, str], tuple[str, ...]] = {}


def _key() -> tuple[int, str, str] | None:
    if not (ctx_state.isset() and ctx_host.isset()):
        return None
    state, host = ctx_state.get(), ctx_host.get()
    op_hash = getattr(host, "current_op_hash", None)
    return None if op_hash is None else (run_id(state, host), str(host.name), str(op_hash))


def keeps_its_plan(body: Body) -> Body:
    """Wrap an operation body (under ``@operation()``) so an approved change is never silently dropped."""

    @functools.wraps(body)
    def guarded(*args: Any, **kwargs: Any) -> Iterator[Any]:
        key = _key()
        executing = ctx_state.isset() and ctx_state.get().is_executing
        commands = list(body(*args, **kwargs))  # building commands writes nothing: they run after this
        writes = _writes(commands)
        if key is not None and not executing:
            _PLANNED[key] = writes
            state, host = ctx_state.get(), ctx_host.get()
            said = refusal.refused_here(state, host)
            if said is not None:
                # a refusal (``refuse`` or the GitOps stance): shown once already, no change to count, the host's
                # later operations not planned and the host marked failed, so --dry exits 1 as -y will (``refusal``)
                _REFUSED_PLANS[key] = said.reason
                return
        elif key is not None and key in _REFUSED_PLANS and not _refuses(commands):
            # approved: the host stops here. Whatever this body would do now, it is not what was approved
            yield FunctionCommand(fail, (f"{k8s_host(ctx_host.get()).where}: the plan you approved stops here, "
                                         f"refused ({_REFUSED_PLANS[key]}); it would not be refused now: "
                                         f"{nothing_written()} — re-run to plan against the new state",), {})
            return
        elif key is not None and key in _PLANNED and writes != _PLANNED[key]:
            planned = _PLANNED[key]
            message = edited_since_read() if not commands and planned else None
            if message is None and writes:
                ctx = k8s_host(ctx_host.get())
                message = (f"{ctx.where}: what would be written changed after the plan you approved was made "
                           f"(approved: {'; '.join(planned) or 'no change'}; now: {'; '.join(writes)}); "
                           f"{nothing_written()} — re-run to plan against the new state")
            if message:
                yield FunctionCommand(fail, (message,), {})
                return
        yield from commands

    return guarded  # type: ignore[return-value]


def approved_plan(planned: Sequence[str]) -> tuple[str, ...] | None:
    """For a body that must never block the run (a crash record) and so cannot be ``keeps_its_plan``'s: while
    detecting changes, remember the writes it shows (``planned``) and return None; at execute, the writes shown then —
    the body makes only those. None too when nothing was detected (``-y`` plans and writes in one pass)."""
    key = _key()
    if key is None:
        return None
    if not ctx_state.get().is_executing:
        _APPROVED[key] = tuple(planned)
        return None
    return _APPROVED.get(key)


def nothing_written() -> str:
    """"nothing was written" when this run has written nothing for the host; else what it did write before this
    step, which wrote nothing (an earlier operation's record is not undone by a later refusal)."""
    earlier = written_in_this_run(ctx_state.get(), ctx_host.get())
    return "nothing was written" if not earlier else (
        f"this step wrote nothing (written earlier in this run: {', '.join(earlier)})")


def _refuses(commands: list[Any]) -> bool:
    """Whether ``commands`` fail the host as a refusal does (``refuse``'s ``fail``, the GitOps stance's ``refused``)."""
    return any(isinstance(c, FunctionCommand) and c.function in (fail, refused) for c in commands)


def _writes(commands: list[Any]) -> tuple[str, ...]:
    """What each guarded write among ``commands`` says it does: its summary up to " — " (the why may differ)."""
    return tuple(str(c.args[2]).split(" — ")[0] for c in commands
                 if isinstance(c, FunctionCommand) and c.function is run_write and len(c.args) > 2)


def edited_since_read(fresh: dict[str, Any] | None = None) -> str | None:
    """One line when the host's workload was changed by someone else since this run read it (``fresh``: as read
    now; by default read here), else None."""
    state, host = ctx_state.get(), ctx_host.get()
    try:
        ctx = k8s_host(host)
        fresh = fresh if fresh is not None else ctx.client.request("GET", ctx.deployment_path)
    except UserError:
        return None  # unreadable now: nothing was planned on it that could be written anyway
    prior = changed_since(state, host, ctx.deployment_path, fresh)
    if prior is None:
        return None
    was = (prior.get("metadata") or {}).get("resourceVersion")
    now = (fresh.get("metadata") or {}).get("resourceVersion")
    return (f"{ctx.where} was edited after the plan you approved was made "
            f"(resourceVersion {was} → {now}); the planned change was not made — re-run to plan against the "
            "new state")


def forget_plans(state: Any) -> None:
    """Drop one run's planned-change records (the Python API reuses the process)."""
    for store in (_PLANNED, _REFUSED_PLANS, _APPROVED):
        for key in [k for k in store if k[0] == id(state)]:
            store.pop(key, None)
