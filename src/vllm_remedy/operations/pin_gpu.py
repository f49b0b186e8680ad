"""Runbook step 4's "pin the GPU type so scheduling cannot pick a smaller card", as a pyinfra operation.

``remedies.pin_gpu.plan_pin`` decides (label variants, capacity, surge on full nodes); this module reads
the nodes, shows the diff of the pod template *and* of the rollout strategy when it must change, and
writes both in one guarded patch — a pinned template with a surge the nodes cannot host would never
finish rolling out. Every other write of a pod template asks the same rule (:func:`surge_switch_for`) and shows and
writes the switch the same way (:func:`strategy_diff`, :func:`switch_spec`): the budget's rung, the eager toggle.

    from vllm_remedy.operations import pin_gpu

    pin_gpu.gpu_product(name="Pin the GPU type", product="NVIDIA-L40S", gpus=1)
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from typing import Any

from pyinfra import host, state
from pyinfra.api import FunctionCommand, operation

from vllm_remedy.facts.nodes import NodeObjects
from vllm_remedy.kube.diff import unified_template_diff
from vllm_remedy.kube.history import template_of
from vllm_remedy.kube.kinds import STATEFULSET
from vllm_remedy.operations.util import (
    Change,
    K8sHost,
    change_command,
    change_lines,
    deployment_object,
    k8s_host,
    keeps_its_plan,
    noop,
    note,
    observe,
    pods_fact,
    refuse,
    server_of,
    set_template,
    show,
)
from vllm_remedy.remedies.budget import policy_gpu
from vllm_remedy.remedies.pin_gpu import (
    PARTIAL,
    SURGE_REASON,
    SurgeSwitch,
    canonical_product,
    describe_strategy,
    gpu_quantity,
    plan_pin,
    stuck_surge_switch,
    template_surge_switch,
)
from vllm_remedy.remedies.predict import Prediction, failed_prediction, pinned_gpu, predict_template

PIN = "pin-gpu"


def ready_now(workload: Mapping[str, Any]) -> int:
    """The workload's Ready pods as its status says: what a full-pool strategy switch would stop serving."""
    return int(((workload.get("status") or {}).get("readyReplicas")) or 0)


def outage_refused(switch: SurgeSwitch | None) -> str | None:
    """The switch's outage (one line) when this run has not consented to it, else None."""
    return switch.outage if switch is not None and refuse_partial() else None


def refuse_partial() -> bool:
    """Whether a pin whose pods only some fit is refused on this host: unless the run's host data consents
    (``--data override=capacity``, ``remedies.pin_gpu.PARTIAL``)."""
    key, _, value = PARTIAL.partition("=")
    return host.data.get(key) != value


def rollout_spec(ctx: K8sHost, workload: Mapping[str, Any]) -> dict[str, Any]:
    """The workload's spec as ``plan_pin`` reads it (selector, replicas, rollout strategy). A StatefulSet replaces a
    pod by deleting it before its successor starts, as a Deployment's Recreate does: no surge pod needs a free GPU,
    so no maxSurge/maxUnavailable switch is planned (nor shown) for a strategy it does not have."""
    spec = dict(workload.get("spec") or {})
    if ctx.kind == STATEFULSET.word:
        spec["strategy"] = {"type": "Recreate"}
    return spec


def surge_switch_for(ctx: K8sHost, workload: Mapping[str, Any], planned: Mapping[str, Any],
                     picture: Mapping[str, Any] | None = None, serving: bool = True) -> SurgeSwitch | None:
    """The strategy switch giving ``workload`` the pod template ``planned`` needs on a full pool
    (``remedies.pin_gpu.template_surge_switch``), None when its rollout can progress as it is. ``picture``: the
    ``NodeObjects`` fact when the operation read it already; ``serving``: False where the caller knows nothing serves
    (restore's hand-over), else its Ready pods weigh (``SurgeSwitch.outage``). A StatefulSet has no surge: never
    read, never switched."""
    if ctx.kind == STATEFULSET.word:
        return None
    picture = picture if picture is not None else host.get_fact(NodeObjects)
    return template_surge_switch(template_of(workload), planned, rollout_spec(ctx, workload), picture["nodes"],
                                 picture["pods"], ctx.namespace, ready_now(workload) if serving else None)


def strategy_diff(ctx: K8sHost, workload: Mapping[str, Any], strategy: Mapping[str, Any] | None) -> list[str]:
    """``diff -u`` of the rollout strategy the write sets ([] when it sets none): the dry run shows every field it
    writes."""
    if strategy is None:
        return []
    current = {"strategy": (workload.get("spec") or {}).get("strategy") or {}}
    return unified_template_diff(current, {"strategy": dict(strategy)}, f"{ctx.where} strategy (current)",
                                 f"{ctx.where} strategy (planned)").rstrip("\n").splitlines()


def switch_spec(switch: SurgeSwitch | None) -> dict[str, Any]:
    """The spec fields a write sets for ``switch`` ({} for none), next to its template in the same guarded patch."""
    return {} if switch is None else {"strategy": copy.deepcopy(switch.strategy)}


def set_template_on_pool(state: Any, host: Any, workload: Mapping[str, Any], planned: Mapping[str, Any], *,
                         action: str, reason: str, summary: str, prediction: Prediction | None,
                         annotations: Mapping[str, str | None] | None = None, picture: Mapping[str, Any] | None = None,
                         strategy_back: Mapping[str, Any] | None = None) -> Iterator[FunctionCommand]:
    """``set_template``, with the strategy switch a full pool needs (:func:`surge_switch_for`) shown beside the
    template's diff and written in the same guarded patch, its reason in the change-cause. A switch that would stop a
    serving workload is refused (in ``--dry`` too) unless the run consents (``override=capacity``); restore's
    hand-over writes only where nothing serves."""
    ctx = k8s_host(host)
    if strategy_back is not None:
        yield _put_back(ctx, workload, planned, strategy_back, action=action, reason=reason, summary=summary,
                        prediction=prediction, annotations=annotations, picture=picture)
        return
    switch = surge_switch_for(ctx, workload, planned, picture, serving=action != "restore")
    if (outage := outage_refused(switch)) is not None:
        yield from refuse(state, host, f"{summary}: {outage}")
        return
    if switch is None:
        yield from set_template(state, host, workload, planned, action=action, reason=reason, summary=summary,
                                prediction=prediction, annotations=annotations)
        return
    observe(state, host, ctx.deployment_path, workload)
    show(state, host, [*change_lines(ctx, summary, template_of(workload), planned, prediction),
                       *strategy_diff(ctx, workload, switch.strategy), switch.line])
    change = Change(spec={"template": copy.deepcopy(dict(planned)), **switch_spec(switch)},
                    annotations=dict(annotations or {}), audit=(action, f"{reason}; {SURGE_REASON}"))
    yield change_command(ctx, ctx.deployment_path, change, summary)


def _put_back(ctx: K8sHost, workload: Mapping[str, Any], planned: Mapping[str, Any], strategy: Mapping[str, Any], *,
              action: str, reason: str, summary: str, prediction: Prediction | None,
              annotations: Mapping[str, str | None] | None, picture: Mapping[str, Any] | None) -> FunctionCommand:
    """A toggle's revert with the strategy its write switched put back (``strategy``) in the same guarded patch —
    unless the pool still has no GPU for that strategy's surge pod: then the revert's rollout would never progress
    under it, and the switch stays, the line saying so."""
    back = {**workload, "spec": {**(workload.get("spec") or {}), "strategy": dict(strategy)}}
    spec: dict[str, Any] = {"template": copy.deepcopy(dict(planned))}
    if surge_switch_for(ctx, back, planned, picture, serving=False) is None:
        spec["strategy"] = copy.deepcopy(dict(strategy))
        extra = [*strategy_diff(ctx, workload, strategy),
                 f"strategy: back to {describe_strategy(strategy)}, as before the toggle's write switched it"]
    else:
        extra = [f"maxSurge 0 / maxUnavailable 1 from the toggle's write stays: still no free GPU for a surge pod of "
                 f"{describe_strategy(strategy)}, so its revert could not roll out under it"]
    observe(state, host, ctx.deployment_path, workload)
    show(state, host, [*change_lines(ctx, summary, template_of(workload), planned, prediction), *extra])
    return change_command(ctx, ctx.deployment_path, Change(spec=spec, annotations=dict(annotations or {}),
                                                           audit=(action, reason)), summary)


def _unblock(ctx: K8sHost, deployment: Mapping[str, Any], switch: SurgeSwitch, pin: str) -> Iterator[FunctionCommand]:
    """The strategy switch alone, for a Deployment already pinned whose rollout a full pool holds up: with
    maxUnavailable 1 the controller takes an old pod down, and the new one gets its GPU."""
    summary = (f"unblock the rollout of {ctx.where} (already pinned to {pin}): its new pod(s) cannot be scheduled "
               "while the old ones hold the GPUs")
    observe(state, host, ctx.deployment_path, deployment)
    show(state, host, [summary, *strategy_diff(ctx, deployment, switch.strategy), switch.line])
    yield change_command(ctx, ctx.deployment_path, Change(spec=switch_spec(switch), audit=(
        PIN, f"unblock a rollout waiting on a surge pod; {SURGE_REASON}")), summary)


def _left_to_budget(ctx: K8sHost, template: Mapping[str, Any], product: str, gpus: int) -> str | None:
    """Why the pin leaves a pod to the budget step after it (None: it does not): the pod runs on ``product`` already
    and its ``--tensor-parallel-size`` needs more than ``gpus``. Pinned to fewer GPUs than its engine needs it would
    not start (``plan_pin`` refuses that); the budget plan brings the size and the count within the policy in one
    write (``planner._base``), the change ``plan --policy`` and ``check`` name."""
    spec = template.get("spec") or {}
    tp = gpu_quantity(server_of(template, ctx.container).flags.get("tensor-parallel-size", "1")) or 1
    pinned = pinned_gpu(spec)
    if (not policy_gpu.pin_strands_ranks(tp, gpus) or pinned is None
            or canonical_product(pinned) != canonical_product(product)):
        return None
    return (f"{ctx.where} runs on {pinned} already; its --tensor-parallel-size {tp} needs {tp} GPUs, more than the "
            f"{gpus} per pod to pin: the budget step sets the size and the GPU count together")


@operation()
@keeps_its_plan
def gpu_product(product: str | None = None, gpus: int | None = None, budget_follows: bool = False
                ) -> Iterator[FunctionCommand]:
    """
    Pin the vLLM pods to one GPU product (nodeSelector) with ``limits: nvidia.com/gpu`` per pod.

    + product: GPU product as GPU feature discovery names it (``NVIDIA-L40S``); default the product the pod pins
      when the policy's ``gpu.products`` allows it, else their first entry (``policy_gpu.product``; no product
      anywhere: nothing to do)
    + gpus: GPUs per pod (``resources.limits``); default the policy's ``gpu.per_pod``
    + budget_follows: the budget step runs next (``budget.FIX``): a pod already on ``product`` whose
      ``--tensor-parallel-size`` needs more than ``gpus`` is left to that step (:func:`_left_to_budget`)

    The label key is the policy's ``gpu.label`` (GFD, GKE or Karpenter) and the value the one matching
    nodes carry (``-SHARED`` only when ``gpu.allow_shared``; MIG slices only when ``product`` names the
    profile); conflicting product keys are dropped. Refused when no schedulable node of that product can
    take a pod, or when only some of the replicas fit (its rollout could not finish) unless the run's host data
    says ``override=capacity``. On full nodes (no free GPU for a surge pod) a Deployment's RollingUpdate becomes
    ``maxSurge: 0, maxUnavailable: 1`` and the diff shows it — refused, like a partial pin, where that would stop
    every Ready pod before a new one starts (one replica, ``maxUnavailable: 0``); a StatefulSet has no surge
    (:func:`rollout_spec`).
    Already pinned: a noop, never refused for want of capacity — unless a rollout waits on a surge pod the pool
    cannot place, which gets the switch alone (:func:`_unblock`).

    **Example:**

    .. code:: python

        pin_gpu.gpu_product(name="Pin the GPU type", product="NVIDIA-L40S", gpus=1)
    """
    ctx = k8s_host(host)
    deployment = deployment_object(host)
    template = template_of(deployment)
    # the product check and plan --policy keep: the one the pod pins when the policy allows it, else the policy's first
    product = product or policy_gpu.product(ctx.policy, pinned_gpu(template.get("spec") or {}))
    if not product:
        noop(state, host, f"no GPU product to pin: policy {ctx.policy.source} names none in gpu.products")
        return
    gpus = int(gpus if gpus is not None else ctx.policy.gpu.per_pod)
    if budget_follows and (why := _left_to_budget(ctx, template, product, gpus)):
        noop(state, host, why)
        return
    picture = host.get_fact(NodeObjects)
    plan = plan_pin(template, rollout_spec(ctx, deployment), picture["nodes"], picture["pods"], ctx.namespace,
                    ctx.policy.gpu, product, gpus, ctx.container, refuse_partial=refuse_partial(),
                    ready=ready_now(deployment))
    if plan.refusal is not None:
        yield from refuse(state, host, f"pin {ctx.where} to {product}: {plan.refusal}")
        return
    if plan.template == template and plan.strategy is None:
        stuck = None if ctx.kind == STATEFULSET.word else stuck_surge_switch(
            rollout_spec(ctx, deployment), template, pods_fact(host).get("pods") or [], picture["nodes"],
            picture["pods"], ctx.namespace, ready_now(deployment))
        if (outage := outage_refused(stuck)) is not None:
            yield from refuse(state, host, f"unblock the rollout of {ctx.where}: {outage}")
            return
        if stuck is None:
            noop(state, host, f"{ctx.where} is already pinned to {plan.label}={plan.value} with {gpus} GPU(s) per pod")
            return
        yield from _unblock(ctx, deployment, stuck, f"{plan.label}={plan.value}")
        return
    prediction = predict_template(plan.template, ctx.container)
    why = failed_prediction(prediction)
    if why is not None:
        yield from refuse(state, host, f"pin {ctx.where} to {product}: {why}")
        return
    summary = f"pin {ctx.where} to {plan.label}={plan.value} with {gpus} GPU(s) per pod"
    lines = change_lines(ctx, summary, template, plan.template, prediction)
    lines += strategy_diff(ctx, deployment, plan.strategy)
    observe(state, host, ctx.deployment_path, deployment)
    if show(state, host, [*lines, *plan.lines]):
        for text in plan.notes:
            note(host, f"note: {text}")
    reason = f"pin {plan.label}={plan.value}, {gpus} GPU(s) per pod" + (
        f"; {SURGE_REASON}" if plan.strategy is not None else "")
    spec: dict[str, Any] = {"template": copy.deepcopy(plan.template)}
    if plan.strategy is not None:
        spec["strategy"] = copy.deepcopy(dict(plan.strategy))
    yield change_command(ctx, ctx.deployment_path, Change(spec=spec, audit=(PIN, reason)), summary)
