"""Writing vLLM flags, shared by every operation that sets them (``workload.flags``, ``load_guard.caps``).

One path for "set these flags": only flags that differ are written, the policy's bounds and the memory
model are asked first, and a refusal is one line naming the flag or the prediction.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from pyinfra.api import FunctionCommand

from vllm_remedy.kube.history import template_of
from vllm_remedy.operations.util.context import K8sHost
from vllm_remedy.operations.util.show import noop
from vllm_remedy.operations.util.template import server_of, with_flags
from vllm_remedy.operations.util.write import refuse, set_template
from vllm_remedy.policy.flags import parse_flag_float
from vllm_remedy.remedies.predict import failed_prediction, predict_template


def same_value(a: str | None, b: str) -> bool:
    """Flag values equal as vLLM reads them (``0.90`` is ``0.9``)."""
    if a is None:
        return False
    if a == b:
        return True
    fa, fb = parse_flag_float(a), parse_flag_float(b)
    return fa is not None and fb is not None and fa == fb


def flag_text(value: Any) -> str:
    """An operation argument as the argv value vLLM parses: ``true``/``false`` for bools, ``%g`` floats (0.9)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def describe(flags: Mapping[str, str]) -> str:
    """Changed flags as a command-line fragment (a ``true`` flag bare) for summaries, refusals and change-cause."""
    return " ".join(f"--{k}" if v == "true" else f"--{k} {v}" for k, v in flags.items())


def propose(state: Any, host: Any, ctx: K8sHost, deployment: dict[str, Any], wanted: Mapping[str, str], *,
            action: str, reason: str, summary: str) -> Iterator[FunctionCommand]:
    """Yield the write setting ``wanted`` flags (only those that differ), refusing policy or memory failures."""
    template = template_of(deployment)
    running = server_of(template, ctx.container).flags
    changes = {k: v for k, v in wanted.items() if not same_value(running.get(k), v)}
    if not changes:
        noop(state, host, f"{ctx.where} already runs with {describe(dict(wanted))}" if wanted
             else f"{summary}: no flag to set")
        return
    planned = with_flags(template, changes, container=ctx.container)
    broken = [v for v in ctx.policy.check_flags(server_of(planned, ctx.container).flags) if v.flag in changes]
    if broken:
        yield from refuse(state, host, f"{describe(changes)}: policy {ctx.policy.source}: {broken[0]}")
        return
    prediction = predict_template(planned, ctx.container)
    why = failed_prediction(prediction)
    if why is not None:
        yield from refuse(state, host, f"{describe(changes)} on {ctx.where}: {why}")
        return
    yield from set_template(state, host, deployment, planned, action=action, reason=f"{reason}: {describe(changes)}",
                            summary=f"{summary} on {ctx.where}: {describe(changes)}", prediction=prediction)
