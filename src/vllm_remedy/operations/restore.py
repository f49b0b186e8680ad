"""Runbook step 1 as pyinfra operations: a crash-looping revision rolled back to a known-good one, or load shed
(lower flags, and part of the gateway's traffic moved to the fallback backend).

Both operations read the same facts and ask ``remedies.restore.decide_restore`` what step 1 calls for, so
each acts only on its own branch and a healthy Deployment yields nothing from either.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

from pyinfra import host, state
from pyinfra.api import FunctionCommand, operation

from vllm_remedy.errors import UserError
from vllm_remedy.facts.deployment import Deployment
from vllm_remedy.facts.history import RolloutHistory
from vllm_remedy.facts.pods import Pods
from vllm_remedy.kube.actions import read_rollout
from vllm_remedy.kube.client import KubeClient
from vllm_remedy.kube.history import HASH_LABEL
from vllm_remedy.kube.rollout import plan_undo
from vllm_remedy.operations.util import (
    Change,
    K8sHost,
    change_command,
    change_lines,
    k8s_host,
    keeps_its_plan,
    noop,
    observe,
    refuse,
    server_of,
    set_template,
    show,
    wait_rollout,
    with_flags,
    write_command,
)
from vllm_remedy.policy import Fallback, LoadShedding
from vllm_remedy.remedies.load_guard import guard_flags
from vllm_remedy.remedies.predict import pinned_gpu, predict_template
from vllm_remedy.remedies.restore import (
    NONE,
    REFUSE,
    ROLLBACK,
    SHED,
    RestoreDecision,
    decide_restore,
    shed_flags,
    shifted_route,
)
from vllm_remedy.vllm.versions import version_from_image

GATEWAY = "gateway.networking.k8s.io/v1"


def _decision(ctx: K8sHost) -> tuple[RestoreDecision, dict[str, Any]]:
    history = host.get_fact(RolloutHistory)
    pods = host.get_fact(Pods)
    deployment = host.get_fact(Deployment)["object"]
    return decide_restore(history, pods, ctx.policy, container=ctx.container,
                          now=ctx.client.server_time()), deployment


def _undo_ops(revision: int, keys: Any, reason: str, client: KubeClient, basis: dict[str, Any],
              at: float) -> list[dict[str, Any]]:
    """kubectl's undo patch to ``revision`` planned on ``basis`` (guarded), [] when already that template."""
    ctx_ns = basis["metadata"]["namespace"]
    replicasets = read_rollout(client, ctx_ns, basis["metadata"]["name"]).replicasets
    plan = plan_undo(basis, replicasets, revision, keys=keys, action="restore", reason=reason, at=at)
    return [] if plan.skipped else plan.patch


@operation()
@keeps_its_plan
def known_good(wait: bool = True, timeout: float | None = None) -> Iterator[FunctionCommand]:
    """
    Roll a crash-looping Deployment back to its last known-good revision and wait until it is Ready.

    + wait: wait for the rollout (failing fast on a crash loop, with the classified startup log)
    + timeout: cluster seconds to wait; default the policy's ``restore.rollout_timeout``

    The revision is the newest earlier one marked known-good by ``confirm``, else one matching a policy
    ``known_good`` unit, else the newest earlier revision whose template differs; the output names the rule.
    Nothing happens when no pod of the current revision is crash-looping.

    **Example:**

    .. code:: python

        restore.known_good(name="Roll back to the last known-good revision", wait=True)
    """
    ctx = k8s_host(host)
    decision, deployment = _decision(ctx)
    if decision.action == REFUSE:
        yield from refuse(state, host, decision.reason)
        return
    if decision.action != ROLLBACK or decision.revision is None:
        noop(state, host, f"nothing to restore: {decision.reason}" if decision.action == NONE
             else f"no rollback: {decision.reason}; step 1 sheds load instead")
        return
    target = {**decision.template, "metadata": {**(decision.template.get("metadata") or {})}}
    labels = {k: v for k, v in (target["metadata"].get("labels") or {}).items() if k != HASH_LABEL}
    target["metadata"]["labels"] = labels
    summary = (f"roll back {ctx.where} from revision {decision.current} to revision {decision.revision} "
               f"({decision.replicaset}) — chosen by rule: {decision.rule}")
    observe(state, host, ctx.deployment_path, deployment)
    before = (deployment.get("spec") or {}).get("template") or {}
    show(state, host, [decision.reason, *change_lines(ctx, summary, before, target,
                                                     predict_template(target, ctx.container))])
    build = functools.partial(_undo_ops, decision.revision, ctx.keys, f"roll back to revision {decision.revision} "
                              f"({decision.rule}): revision {decision.current} crash-looped")
    yield write_command(ctx.deployment_path, build, summary)
    if wait:
        seconds = timeout if timeout is not None else ctx.policy.restore.rollout_timeout.total_seconds()
        yield FunctionCommand(wait_rollout, (seconds, f"wait for revision {decision.revision}'s template to roll out",
                                             decision.replicaset), {})


@operation()
@keeps_its_plan
def shed_load(fallback: bool = True, wait: bool = True) -> Iterator[FunctionCommand]:
    """
    Shed load from a Deployment that crash-loops with OOM under load when nothing was deployed recently.

    + fallback: also move the policy's ``fallback.shift_percent`` of traffic to the fallback backend of
      the HTTPRoute the policy names (when it names one)
    + wait: wait for the shed pods to roll out, failing fast (with the log) if they die under load again

    Lowers ``--max-num-seqs``, ``--max-model-len`` and ``--max-num-batched-tokens`` to the policy's
    ``load_shedding`` values (never raises them). Nothing happens when the Deployment is healthy or
    step 1 calls for a rollback instead.

    **Example:**

    .. code:: python

        restore.shed_load(name="Shed load while OOM under load", fallback=True)
    """
    ctx = k8s_host(host)
    decision, deployment = _decision(ctx)
    if decision.action != SHED:
        noop(state, host, "no load to shed: the current revision crash-loops, so step 1 rolls back instead"
             if decision.action == ROLLBACK else f"no load to shed: {decision.reason}")
        return
    template = (deployment.get("spec") or {}).get("template") or {}
    server = server_of(template, ctx.container)
    lower = shed_flags(server.flags, ctx.policy)
    # the policy's prefill cap sheds the per-step memory that long prompts need (runbook step 5), with
    # load_guard's rule for when vLLM accepts it (chunked prefill, or not below max-model-len)
    cap = LoadShedding(max_num_batched_tokens=ctx.policy.load_shedding.max_num_batched_tokens)
    lower.update(guard_flags({**server.flags, **lower}, cap, model=str(server.model),
                             version=version_from_image(server.image),
                             gpu=pinned_gpu(template.get("spec") or {})).set)
    route = ctx.policy.fallback if fallback else None
    if not lower and route is None:
        yield from refuse(state, host, f"{decision.reason}, but policy {ctx.policy.source} sets no "
                          "load_shedding.max_num_seqs/max_model_len below what runs and no fallback route")
        return
    if route is not None:  # traffic off the dying backend first: the shed pods start under less load
        yield from shift_gateway(ctx, route)
    if lower:
        planned = with_flags(template, lower, container=ctx.container)
        flags = " ".join(f"--{k} {v}" for k, v in lower.items())
        yield from set_template(state, host, deployment, planned, action=SHED,
                                reason=f"OOM under load; shed load with {flags}",
                                summary=f"shed load on {ctx.where}: {flags} (the prediction is for startup; "
                                        "the load that killed it is not modelled)",
                                prediction=predict_template(planned, ctx.container))
        if wait:
            seconds = ctx.policy.restore.rollout_timeout.total_seconds()
            yield FunctionCommand(wait_rollout, (seconds, "wait for the shed-load template to roll out"), {})


def route_path(fallback: Fallback) -> str:
    """The fallback HTTPRoute's Gateway API path (names URL-quoted), read and patched with the host's client
    because the verbs cover only the Deployment's own objects."""
    ref = fallback.route
    return f"/apis/{GATEWAY}/namespaces/{quote(ref.namespace, safe='')}/httproutes/{quote(ref.name, safe='')}"


def _weights(route: dict[str, Any]) -> list[str]:
    out = []
    for i, rule in enumerate((route.get("spec") or {}).get("rules") or []):
        parts = [f"{r.get('name')}={r.get('weight', 1)}" for r in rule.get("backendRefs") or []]
        out.append(f"rule {i}: " + ", ".join(parts))
    return out


def shift_gateway(ctx: K8sHost, fallback: Fallback) -> Iterator[FunctionCommand]:
    """Yield the guarded write moving the policy's share of an HTTPRoute's traffic to the fallback backend
    (runbook step 1: "route part of the traffic to a fallback model or hosted API at the gateway")."""
    path = route_path(fallback)
    try:
        route = ctx.client.request("GET", path)
        desired = shifted_route(route, fallback)
    except UserError as exc:
        yield from refuse(state, host, f"policy fallback.route: {exc}")
        return
    where = f"HTTPRoute {fallback.route.namespace}/{fallback.route.name}"
    if desired == route:
        noop(state, host, f"{where} already sends {fallback.shift_percent}% to {fallback.fallback.name}")
        return
    observe(state, host, path, route)
    summary = (f"shift {fallback.shift_percent}% of {where}'s traffic from {fallback.primary.name} to "
               f"{fallback.fallback.name}")
    show(state, host, [summary, *(f"  - {w}" for w in _weights(route)), *(f"  + {w}" for w in _weights(desired))],
         topic="route")
    change = Change(spec={"rules": (desired.get("spec") or {}).get("rules") or []},
                    audit=(SHED, f"shift {fallback.shift_percent}% of traffic to {fallback.fallback.name}"))
    yield change_command(ctx, path, change, summary)
