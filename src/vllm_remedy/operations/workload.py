"""Operations on the vLLM workload as a whole that several runbook steps share.

Every deploy starts with ``revert_expired_toggles`` (a temporary ``--enforce-eager`` comes off on whichever run
happens after its expiry) and ends with ``rolled_out``; ``flags`` declares vLLM flags for deploys that state
a budget directly. Each step's own operation lives in ``operations/<step>.py``.

    from vllm_remedy.operations import workload

    workload.revert_expired_toggles(name="Revert expired temporary toggles")
    workload.flags(name="Explicit memory budget", max_model_len=16384, gpu_memory_utilization=0.90)
    workload.rolled_out(name="Wait until the new pods are Ready")
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from pyinfra import host, state
from pyinfra.api import FunctionCommand, operation

from vllm_remedy.errors import UserError
from vllm_remedy.facts.deployment import Deployment
from vllm_remedy.facts.statefulset import StatefulSetState
from vllm_remedy.kube.errors import KubeError, RolloutError
from vllm_remedy.kube.history import template_of
from vllm_remedy.kube.kinds import STATEFULSET
from vllm_remedy.kube.serving import ServingGate
from vllm_remedy.kube.wait import rollout_pods, rollout_status
from vllm_remedy.operations import pin_gpu, sts_rollout
from vllm_remedy.operations.enforce_eager import strategy_of, warn_malformed
from vllm_remedy.operations.util import (
    K8sHost,
    crash_loop_ahead,
    deployment_object,
    flag_text,
    k8s_host,
    keeps_its_plan,
    noop,
    planned,
    pods_fact,
    propose,
    refuse,
    server_of,
    set_template,
    wait_rollout,
    wrote_in_this_run,
)
from vllm_remedy.operations.util.wait import still_loading
from vllm_remedy.remedies import enforce_eager
from vllm_remedy.remedies.load_guard import format_mm_limits
from vllm_remedy.remedies.predict import failed_prediction, predict_template
from vllm_remedy.vllm.versions import version_from_image

FLAGS, EXPIRE = "flags", "expire"
#: How ``revert_expired_toggles`` starts the line when it keeps an expired toggle (``vllm-remedy expire`` fails on it).
KEPT = "kept expired toggle "


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

        workload.flags(
            name="Explicit memory budget",
            max_model_len=16384,
            gpu_memory_utilization=0.90,
            max_num_seqs=64,
        )
    """
    ctx = k8s_host(host)
    deployment = deployment_object(host)
    server = server_of(template_of(deployment), ctx.container)
    given: dict[str, Any] = {"max-model-len": max_model_len, "gpu-memory-utilization": gpu_memory_utilization,
                             "max-num-seqs": max_num_seqs, "max-num-batched-tokens": max_num_batched_tokens,
                             "kv-cache-dtype": kv_cache_dtype, "tensor-parallel-size": tensor_parallel_size,
                             "max-loras": max_loras}
    wanted = {k: flag_text(v) for k, v in given.items() if v is not None}
    if limit_mm_per_prompt:
        wanted["limit-mm-per-prompt"] = format_mm_limits(dict(limit_mm_per_prompt), version_from_image(server.image))
    yield from propose(state, host, ctx, deployment, wanted, action=FLAGS, reason=reason, summary="set vLLM flags")


@operation()
def revert_expired_toggles() -> Iterator[FunctionCommand]:
    """
    Revert every temporary toggle whose expiry (cluster time) has passed — every deploy calls this first.

    The container's exact prior argv is restored only when, as written, it is the running container with the
    toggled flag removed, token for token (same container, command, script text, model, other flags, and no
    spelling of the flag: ``--enforce-eager false`` in a record is not "off", it is a word added); otherwise only
    the toggled flag is removed and the output says why — the record is annotation data, never authority for what runs.
    The revert is a write like any other: when the memory model predicts the server will not start without
    the toggle, nothing is written and the line says why (the toggle stays, past its expiry: drift and the
    expiry alert report it until the budget is fixed); other deploys go on. An unreadable toggle record (e.g.
    an expiry of ``tomorrow``) is one warning line and left in place. An expiry later than now plus the policy's
    ``enforce_eager.max_duration`` was not set by us under this policy: it is treated as expired, the line saying
    so. Nothing happens when no toggle has expired.

    **Example:**

    .. code:: python

        workload.revert_expired_toggles(name="Revert expired temporary toggles")
    """
    ctx = k8s_host(host)
    deployment = deployment_object(host)
    template = template_of(deployment)
    notes = (deployment.get("metadata") or {}).get("annotations") or {}
    warn_malformed(state, host, enforce_eager.malformed(ctx.keys, notes))
    try:
        now, limit = ctx.client.server_time(), ctx.policy.enforce_eager.max_duration.total_seconds()
        due = enforce_eager.expired(ctx.keys, notes, now, limit)
        drops: dict[str, str | None] = {}
        said = []
        back: dict[str, Any] | None = None
        for record in due:
            undo = enforce_eager.revert(template, ctx.keys, record, ctx.container,
                                        enforce_eager.due(record, now, limit))
            template = undo.template
            drops.update(undo.annotations)
            put, kept = enforce_eager.strategy_back(record, strategy_of(deployment))
            back = back or put
            said.append(f"{record.name}: {undo.message}" + (f"; {kept}" if kept else ""))
    except UserError as exc:
        yield from refuse(state, host, f"{ctx.where}: {exc}")
        return
    if not due:
        noop(state, host, "no temporary toggle has expired")
        return
    prediction = predict_template(template, ctx.container)
    why = failed_prediction(prediction)
    if why is not None:
        names = ", ".join(f"{t.name} (expired {t.expires})" for t in due)
        noop(state, host, f"{KEPT}{names} on {ctx.where}: without it {why}; fix the budget first "
             "(deploys/budget.py) - drift and the expiry alert report it until then")
        return
    if back is not None:  # the toggle's write switched the strategy on a full pool: it goes back with the flag
        yield from pin_gpu.set_template_on_pool(state, host, deployment, template, action=EXPIRE,
                                                reason="; ".join(said),
                                                summary=f"revert expired toggles on {ctx.where}: {'; '.join(said)}",
                                                prediction=prediction, annotations=drops, strategy_back=back)
        return
    yield from set_template(state, host, deployment, template, action=EXPIRE, reason="; ".join(said),
                            summary=f"revert expired toggles on {ctx.where}: {'; '.join(said)}",
                            prediction=prediction, annotations=drops)


def unserved(ctx: K8sHost) -> list[str]:
    """The Deployment's new pods whose vLLM container has no readiness or startup probe and whose log does not show
    it serving yet (``kube.serving``); [] when none, or when the pods cannot be read (the wait would say why)."""
    client = ctx.client.live()
    try:
        _, pods = rollout_pods(client, ctx.namespace, ctx.deployment)
        return ServingGate(client, ctx.namespace, ctx.container, look=0.0).waiting(pods)
    except KubeError:
        return []


@operation()
def rolled_out(timeout: float | None = None) -> Iterator[FunctionCommand]:
    """
    The workload is rolled out and its new pods are Ready; waits (cluster time) if a rollout is under way.

    + timeout: cluster seconds to wait; default the policy's ``restore.rollout_timeout``

    Fails fast when the new pods crash-loop or stay unschedulable, with the classified startup log.
    Nothing happens when the rollout is already complete. On a StatefulSet the update strategy is said first
    (``operations.sts_rollout``): pods the controller will not replace by itself (OnDelete, a crash-looping pod
    under OrderedReady) are deleted only under the policy's ``restore.delete_pods: blocking``, else named.

    **Example:**

    .. code:: python

        workload.rolled_out(name="Wait until the new pods are Ready")
    """
    ctx = k8s_host(host)
    deployment = deployment_object(host)
    seconds = timeout if timeout is not None else ctx.policy.restore.rollout_timeout.total_seconds()
    notes = (deployment.get("metadata") or {}).get("annotations") or {}
    ours = notes.get(ctx.keys.last_action)
    label = f"wait for {ctx.where} to roll out"
    # a rerun after a run died mid-wait (kill -9, a lost terminal) resumes the wait: say whose write it was
    if ours and not wrote_in_this_run(state, host, ctx.deployment_path):
        label += f" (last vllm-remedy write: {ours} at {notes.get(ctx.keys.last_action_at, '?')})"
    if ctx.kind == STATEFULSET.word:  # its own wait: OnDelete, a partition and OrderedReady's stuck pods
        facts = host.get_fact(StatefulSetState)
        yield from sts_rollout.wait(ctx, deployment, facts["pods"], pods_fact(host)["pods"], seconds, label)
        return
    try:
        _, done = rollout_status(deployment)
    except RolloutError:
        done = False
    if done:
        target = planned.rolled_back_to(host, ctx.deployment_path) if planned.detecting(host) else None
        if target is not None:  # --dry never runs the rollback's wait; -y runs it first, then finds it done here
            noop(state, host, f"{ctx.where}: will wait for revision {target} to roll out (the rollback's wait, above)")
            return
        if still_loading(state, host, ctx.where, label, unserved(ctx)):
            yield FunctionCommand(wait_rollout, (seconds, label), {})
        return
    crash_loop_ahead(state, host, ctx, host.get_fact(Deployment)["object"], deployment, pods_fact(host), label)
    yield FunctionCommand(wait_rollout, (seconds, label), {})
