"""vLLM's command line as pyinfra operations: declared flags, step-5 caps, the timed ``--enforce-eager`` toggle.

Every write is predicted before it is proposed (KV tokens, maximum concurrency, outcome on the pinned
GPU) and a change the memory model predicts to fail is refused with one line naming the prediction.
``revert_expired_toggles`` is the hook every deploy calls first, so a temporary toggle comes off on
whichever run happens after its expiry; ``rolled_out`` is what deploys end with.

    from vllm_remedy.operations import vllm

    vllm.revert_expired_toggles(name="Revert expired temporary toggles")
    vllm.flags(name="Explicit memory budget", max_model_len=16384, gpu_memory_utilization=0.90)
    vllm.enforce_eager(name="Temporary eager mode", enabled=True, ttl="2h")
    vllm.rolled_out(name="Wait until the new pods are Ready")
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Iterator, Mapping
from typing import Any

from pyinfra import host, state
from pyinfra.api import FunctionCommand, operation

from vllm_remedy.errors import UserError
from vllm_remedy.facts.deployment import Deployment
from vllm_remedy.kube.annotations import Keys, Toggle, action_annotations, rfc3339, toggle_annotations
from vllm_remedy.kube.client import KubeClient
from vllm_remedy.kube.errors import RolloutError
from vllm_remedy.kube.history import template_of
from vllm_remedy.kube.patch import json_patch
from vllm_remedy.kube.wait import rollout_status
from vllm_remedy.operations._plan import keeps_its_plan
from vllm_remedy.operations.rollout import wait_rollout
from vllm_remedy.operations.util import (
    K8sHost,
    Prediction,
    change_lines,
    k8s_host,
    observe,
    predict_template,
    refuse,
    server_of,
    set_template,
    show,
    with_flags,
    write_command,
)
from vllm_remedy.policy import LoadShedding, format_duration
from vllm_remedy.policy.flags import parse_flag_float
from vllm_remedy.remedies import toggle
from vllm_remedy.remedies.load_guard import format_mm_limits, guard_flags
from vllm_remedy.vllm.versions import version_from_image

FLAGS, CAPS, EAGER_ON, EAGER_OFF, EXPIRE = "flags", "load-guard", "enforce-eager", "enforce-eager-off", "expire"


def deployment_object() -> dict[str, Any]:
    """The host's Deployment as the API sent it (what guarded writes are planned against)."""
    return dict(host.get_fact(Deployment)["object"])


def failed_prediction(prediction: Prediction) -> str | None:
    """Why a prediction forbids the change (``None`` when it fits or cannot be judged).

    A start the estimator calls ``fits`` whose peak still exceeds the card is treated as a failure too.
    """
    e = prediction.estimate
    if e is None:
        return None
    if not e.fits:
        return f"predicted {e.outcome.value} on {prediction.gpu} ({prediction.line()})"
    if e.total_gib - e.peak_gib < 0:
        return (f"predicted peak {e.peak_gib:.2f} GiB exceeds the {e.total_gib:.2f} GiB of {prediction.gpu} "
                f"({prediction.line()})")
    return None


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


def propose(ctx: K8sHost, deployment: dict[str, Any], wanted: Mapping[str, str], *, action: str, reason: str,
            summary: str) -> Iterator[FunctionCommand]:
    """Yield the write setting ``wanted`` flags (only those that differ), refusing policy or memory failures."""
    template = template_of(deployment)
    running = server_of(template, ctx.container).flags
    changes = {k: v for k, v in wanted.items() if not same_value(running.get(k), v)}
    if not changes:
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


@operation()
@keeps_its_plan
def flags(max_model_len: int | None = None, gpu_memory_utilization: float | None = None,
          max_num_seqs: int | None = None, max_num_batched_tokens: int | None = None,
          kv_cache_dtype: str | None = None, tensor_parallel_size: int | None = None,
          max_loras: int | None = None, limit_mm_per_prompt: Mapping[str, int] | None = None,
          reason: str = "explicit memory budget") -> Iterator[FunctionCommand]:
    """
    Run the vLLM server with these flags (the ones given; ``None`` leaves a flag as it is).

    + max_model_len: ``--max-model-len`` (explicit, never the model's default)
    + gpu_memory_utilization: ``--gpu-memory-utilization`` (0.90 equals 0.9)
    + max_num_seqs: ``--max-num-seqs``
    + max_num_batched_tokens: ``--max-num-batched-tokens``
    + kv_cache_dtype: ``--kv-cache-dtype`` (fp8 only where the policy allows it)
    + tensor_parallel_size: ``--tensor-parallel-size``
    + max_loras: ``--max-loras``
    + limit_mm_per_prompt: ``--limit-mm-per-prompt`` as a mapping, written in the running version's syntax
    + reason: why, recorded in ``kubernetes.io/change-cause`` and the last-action annotations

    Refused (one line, nothing written) when a value breaks the policy's bounds or the memory model
    predicts the result will not start on the pinned GPU. Nothing happens when the server already runs
    with these values.

    **Example:**

    .. code:: python

        vllm.flags(
            name="Explicit memory budget",
            max_model_len=16384,
            gpu_memory_utilization=0.90,
            max_num_seqs=64,
        )
    """
    ctx = k8s_host(host)
    deployment = deployment_object()
    server = server_of(template_of(deployment), ctx.container)
    given: dict[str, Any] = {"max-model-len": max_model_len, "gpu-memory-utilization": gpu_memory_utilization,
                             "max-num-seqs": max_num_seqs, "max-num-batched-tokens": max_num_batched_tokens,
                             "kv-cache-dtype": kv_cache_dtype, "tensor-parallel-size": tensor_parallel_size,
                             "max-loras": max_loras}
    wanted = {k: flag_text(v) for k, v in given.items() if v is not None}
    if limit_mm_per_prompt:
        wanted["limit-mm-per-prompt"] = format_mm_limits(dict(limit_mm_per_prompt), version_from_image(server.image))
    yield from propose(ctx, deployment, wanted, action=FLAGS, reason=reason, summary="set vLLM flags")


@operation()
@keeps_its_plan
def load_caps(max_num_batched_tokens: int | None = None, limit_mm_per_prompt: Mapping[str, int] | None = None,
              max_loras: int | None = None) -> Iterator[FunctionCommand]:
    """
    Cap what one engine step may take on (runbook step 5, OOM under load): values are maxima, never raised.

    + max_num_batched_tokens: at most this ``--max-num-batched-tokens`` (the version's default counts
      when the flag is absent; never below ``--max-model-len`` without chunked prefill)
    + limit_mm_per_prompt: at most these items per modality (multimodal models only), e.g. ``{"image": 2}``
    + max_loras: at most this ``--max-loras`` (only when ``--enable-lora`` is on)

    Only flags that change are written; each skipped cap is explained when ``--diff``/``--dry`` shows it.

    **Example:**

    .. code:: python

        vllm.load_caps(name="Cap prefill chunks", max_num_batched_tokens=4096)
    """
    ctx = k8s_host(host)
    deployment = deployment_object()
    template = template_of(deployment)
    server = server_of(template, ctx.container)
    shed = LoadShedding(max_num_batched_tokens=max_num_batched_tokens, max_loras=max_loras,
                        limit_mm_per_prompt=dict(limit_mm_per_prompt) if limit_mm_per_prompt else None)
    prediction = predict_template(template, ctx.container)
    try:
        guard = guard_flags(server.flags, shed, model=server.model, version=version_from_image(server.image),
                            gpu=prediction.gpu)
    except UserError as exc:
        yield from refuse(state, host, f"{ctx.where}: {exc}")
        return
    if guard.notes:  # why a cap the policy names is not written: already low enough, or vLLM would refuse it
        show(state, host, [f"cap load on {ctx.where}: {note_}" for note_ in guard.notes], topic="caps-skipped")
    yield from propose(ctx, deployment, guard.set, action=CAPS, reason="OOM under load (step 5): cap per policy",
                       summary="cap load")


def _record(ctx: K8sHost, deployment: Mapping[str, Any]) -> toggle.Toggle | None:
    notes = (deployment.get("metadata") or {}).get("annotations") or {}
    return toggle.active(ctx.keys, notes)


@operation()
@keeps_its_plan
def enforce_eager(enabled: bool = True, ttl: str | int | None = None) -> Iterator[FunctionCommand]:
    """
    ``--enforce-eager`` as a timed toggle: on for at most ``ttl``, then any later run reverts it.

    + enabled: True turns eager mode on (if it is off); False takes it off now, restoring the prior argv
    + ttl: how long it may stay on (``"30m"``, ``"2h"``; seconds as int); default and maximum is the
      policy's ``enforce_eager.max_duration`` — a longer ttl is refused

    Turning it on records the expiry (RFC 3339, cluster time) and the container's exact prior
    ``command``/``args`` as annotations; an existing toggle is never extended. Eager mode disables CUDA
    graphs: less memory, less throughput — a stop-gap while the real fix (budget, GPU) is found.

    **Examples:**

    .. code:: python

        vllm.enforce_eager(name="Temporary eager mode", enabled=True, ttl="2h")
        vllm.enforce_eager(name="Eager mode off", enabled=False)
    """
    ctx = k8s_host(host)
    deployment = deployment_object()
    template = template_of(deployment)
    seconds, base, again = 0, template, ""
    try:
        record = _record(ctx, deployment)
        running = server_of(template, ctx.container).flags
        is_on = running.get("enforce-eager", "false") not in ("false", "False", "0")
        if enabled:
            seconds = toggle.ttl_seconds(ttl, ctx.policy)
            now = ctx.client.server_time()
            if is_on and record is not None and record.expired(now):
                # this run's revert_expired_toggles takes it off first; then it goes on anew (planned from the
                # reverted argv, so --dry shows what -y does) - the old toggle is never extended
                again = f" again (the last toggle expired {record.expires})"
                base = toggle.revert(template, ctx.keys, record, ctx.container).template
            elif is_on and record is not None:
                return
            else:
                base = with_flags(template, unset=["enforce-eager"], container=ctx.container) if is_on else template
            planned, notes = toggle.switch_on(base, ctx.keys, now, seconds, ctx.container)
        elif record is not None:
            undo = toggle.revert(template, ctx.keys, record, ctx.container)
            planned, notes = undo.template, dict(undo.annotations)
        elif is_on:
            planned, notes = with_flags(template, unset=["enforce-eager"], container=ctx.container), {}
        else:
            return
    except UserError as exc:
        yield from refuse(state, host, f"{ctx.where}: {exc}")
        return
    prediction = predict_template(planned, ctx.container)
    if not enabled:
        yield from set_template(state, host, deployment, planned, action=EAGER_OFF, prediction=prediction,
                                reason="--enforce-eager off", summary=f"turn off --enforce-eager on {ctx.where}",
                                annotations=notes)
        return
    why = failed_prediction(prediction)
    if why is not None:
        yield from refuse(state, host, f"--enforce-eager on {ctx.where}: {why}")
        return
    summary = f"turn on --enforce-eager{again} on {ctx.where} for {format_duration(seconds)}"
    observe(state, host, ctx.deployment_path, deployment)
    show(state, host, change_lines(ctx, f"{summary} (until about {notes[ctx.keys.toggle_expires(toggle.EAGER)]})",
                                   template, planned, prediction))
    build = functools.partial(_eager_ops, planned, toggle.argv_record(base, ctx.container), seconds, ctx.keys)
    yield write_command(ctx.deployment_path, build, summary)


def _eager_ops(template: dict[str, Any], prior: dict[str, Any], seconds: int, keys: Keys, client: KubeClient,
               basis: dict[str, Any], at: float) -> list[dict[str, Any]]:
    """Guarded ops turning eager mode on; the expiry counts from the write itself (cluster time ``at``)."""
    notes = dict((basis.get("metadata") or {}).get("annotations") or {})
    if (basis.get("spec") or {}).get("template") == template and keys.toggle_expires(toggle.EAGER) in notes:
        return []
    expires = rfc3339(at + seconds)
    desired = copy.deepcopy(basis)
    desired["spec"]["template"] = copy.deepcopy(template)
    notes.update(action_annotations(keys, EAGER_ON, f"--enforce-eager until {expires} (temporary; reverts on the "
                                                    "next run after)", at))
    notes.update(toggle_annotations(keys, Toggle(toggle.EAGER, expires, prior)))
    desired["metadata"]["annotations"] = notes
    return json_patch(basis, desired)


@operation()
def revert_expired_toggles() -> Iterator[FunctionCommand]:
    """
    Revert every temporary toggle whose expiry (cluster time) has passed — every deploy calls this first.

    The container's exact prior argv is restored when only the toggled flag was added; if other flags
    changed meanwhile, only the toggled flag is removed (their change is kept) and the output says so.
    Nothing happens when no toggle has expired.

    **Example:**

    .. code:: python

        vllm.revert_expired_toggles(name="Revert expired temporary toggles")
    """
    ctx = k8s_host(host)
    deployment = deployment_object()
    template = template_of(deployment)
    notes = (deployment.get("metadata") or {}).get("annotations") or {}
    try:
        due = toggle.expired(ctx.keys, notes, ctx.client.server_time())
        drops: dict[str, str | None] = {}
        said = []
        for record in due:
            undo = toggle.revert(template, ctx.keys, record, ctx.container)
            template = undo.template
            drops.update(undo.annotations)
            said.append(f"{record.name}: {undo.message}")
    except UserError as exc:
        yield from refuse(state, host, f"{ctx.where}: {exc}")
        return
    if not due:
        return
    yield from set_template(state, host, deployment, template, action=EXPIRE, reason="; ".join(said),
                            summary=f"revert expired toggles on {ctx.where}: {'; '.join(said)}",
                            prediction=predict_template(template, ctx.container), annotations=drops)


@operation()
def rolled_out(timeout: float | None = None) -> Iterator[FunctionCommand]:
    """
    The Deployment is rolled out and its new pods are Ready; waits (cluster time) if a rollout is under way.

    + timeout: cluster seconds to wait; default the policy's ``restore.rollout_timeout``

    Fails fast when the new pods crash-loop or stay unschedulable, with the classified startup log.
    Nothing happens when the rollout is already complete.

    **Example:**

    .. code:: python

        vllm.rolled_out(name="Wait until the new pods are Ready")
    """
    ctx = k8s_host(host)
    deployment = deployment_object()
    try:
        _, done = rollout_status(deployment)
    except RolloutError:
        done = False
    if done:
        return
    seconds = timeout if timeout is not None else ctx.policy.restore.rollout_timeout.total_seconds()
    yield FunctionCommand(wait_rollout, (seconds, f"wait for {ctx.where} to roll out"), {})
