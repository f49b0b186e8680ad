"""The plan the operator approved is the plan that runs, or the host fails saying why.

pyinfra runs an operation body twice: once to detect changes (what ``--dry`` and the prompt show) and
again at execute, on fresh facts. If someone edits the Deployment at the prompt, the second run may find
nothing to do (a rollback no longer "needed" because the new revision has not crash-looped yet) and
pyinfra would report "No changes" - an approved rollback silently dropped. A body wrapped in
``keeps_its_plan`` that planned a change but yields nothing at execute checks whether the Deployment was
edited by someone else since it was read; if so the host fails with one line instead.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from pyinfra.api import FunctionCommand
from pyinfra.context import ctx_host, ctx_state

from vllm_remedy.errors import UserError
from vllm_remedy.operations.util.context import k8s_host
from vllm_remedy.operations.util.write import changed_since, fail, run_id

Body = TypeVar("Body", bound=Callable[..., Iterator[Any]])

#: (run, host, operation hash) of every body that planned a change while changes were detected.
_PLANNED: set[tuple[int, str, str]] = set()


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
        key, yielded = _key(), False
        executing = ctx_state.isset() and ctx_state.get().is_executing
        for command in body(*args, **kwargs):
            if key is not None and not executing:
                _PLANNED.add(key)
            yielded = True
            yield command
        if not yielded and executing and key is not None and key in _PLANNED:
            message = edited_since_read()
            if message:
                yield FunctionCommand(fail, (message,), {})

    return guarded  # type: ignore[return-value]


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
    for key in [k for k in _PLANNED if k[0] == id(state)]:
        _PLANNED.discard(key)
