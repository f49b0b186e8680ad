"""Runbook step 1 → step 4: when no revision is predicted to serve, restore applies the budget's smallest change.

``remedies.restore.decide_restore`` hands over (action ``budget``) when every earlier revision was skipped on
evidence but one of them served: the newest held back only by where its pods would go now. Rolling back to a
known-bad revision would waste the outage, and a refusal would leave the operator to type the next command,
so the same run writes that revision's template with what ``deploys/budget.py`` would do to it — the policy's
GPU pinned (``remedies.pin_gpu``) and the planner's first safe rung (``operations.budget``) — as one guarded
write, shown with its diff and prediction (and, on a full pool, the maxSurge 0 switch the pin and the budget write:
``pin_gpu.set_template_on_pool``), then waits. Anything budget would refuse fails the host with every
reason (the skipped revisions' and the planner's).

    restore.known_good(...); handover.budget_handover(name="Budget's smallest change when nothing serves")
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pyinfra import host, state
from pyinfra.api import FunctionCommand, operation

from vllm_remedy.errors import UserError
from vllm_remedy.facts.nodes import NodeObjects
from vllm_remedy.kube.history import HASH_LABEL
from vllm_remedy.operations.budget import _schedulable_step, plan_for, planned_template
from vllm_remedy.operations.pin_gpu import set_template_on_pool
from vllm_remedy.operations.restore import _decision
from vllm_remedy.operations.restore_annotations import after_rollback
from vllm_remedy.operations.util import K8sHost, keeps_its_plan, noop, refuse, show, wait_rollout
from vllm_remedy.operations.util.context import k8s_host
from vllm_remedy.remedies.pin_gpu import plan_pin
from vllm_remedy.remedies.predict import failed_prediction, predict_template
from vllm_remedy.remedies.restore import HANDOVER, NONE, REFUSE, ROLLBACK, RestoreDecision

RESTORE = "restore"


def _bare(template: dict[str, Any]) -> dict[str, Any]:
    meta = dict(template.get("metadata") or {})
    meta["labels"] = {k: v for k, v in (meta.get("labels") or {}).items() if k != HASH_LABEL}
    return {**template, "metadata": meta}


def budget_template(ctx: K8sHost, deployment: dict[str, Any], base: dict[str, Any], picture: dict[str, Any]
                    ) -> tuple[dict[str, Any], dict[str, str], str]:
    """(template, toggle annotations, what it does): ``base`` pinned to the policy's GPU plus the planner's
    first schedulable rung; a UserError says why budget cannot (no product, no capacity, nothing fits)."""
    plan, product = plan_for(ctx, base, None, None, picture, pods_run_template=False)
    if plan.verdict not in ("change", "no_change_needed"):
        raise UserError(f"budget: {plan.problem}; no change within policy {ctx.policy.source} is predicted to fit")
    pin = plan_pin(base, deployment.get("spec") or {}, picture["nodes"], picture["pods"], ctx.namespace,
                   ctx.policy.gpu, product, ctx.policy.gpu.per_pod, ctx.container)
    if pin.refusal is not None:
        raise UserError(f"budget: pin {product}: {pin.refusal}")
    if pin.capacity_pods == 0:  # the revision pins the product already (no pin write to refuse), yet nothing fits
        raise UserError(f"budget: pin {product}: no schedulable {pin.value} capacity: {len(pin.nodes)} node(s) "
                        f"labelled {pin.label}={pin.value}, {pin.free} free GPU(s), none can take its pods")
    what = [f"pin {pin.label}={pin.value}"]
    if plan.verdict == "no_change_needed":
        return pin.template, {}, what[0] + f" (its flags fit {product} with headroom)"
    step, moved, skipped = _schedulable_step(ctx, {**deployment, "spec": {**(deployment.get("spec") or {}),
                                                                           "template": base}}, plan, picture)
    if step is None:
        raise UserError(f"budget: {plan.problem}; no rung is schedulable{skipped}")
    show(state, host, [f"budget problem: {plan.problem}", *(f"note: {n}" for n in plan.notes)], topic="plan")
    planned, notes = planned_template(ctx, moved or pin.template, step, ctx.client.server_time(), pinned=True)
    return planned, notes, f"{what[0]}; {step.describe()} ({step.lever}, rung {step.rank} of {len(plan.steps)})"


@operation()
@keeps_its_plan
def budget_handover(wait: bool = True, revision: int | None = None) -> Iterator[FunctionCommand]:
    """
    When step 1 finds no revision predicted to serve, apply runbook step 4 to the last revision that served.

    + wait: wait for the rollout (failing fast on a crash loop, with the classified startup log)
    + revision: the operator's rollback target (``--data revision=N``): then there is nothing to hand over

    The template is that revision's with the policy's GPU pinned and the budget planner's smallest change
    (``deploys/budget.py``'s own logic), shown with its diff and prediction and written once, guarded. The host
    fails with every reason when budget cannot help either. Nothing happens in every other case.

    **Example:**

    .. code:: python

        handover.budget_handover(name="Budget's smallest change when no revision is predicted to serve")
    """
    ctx = k8s_host(host)
    decision, deployment = _decision(ctx, revision)
    if decision.action != HANDOVER:
        noop(state, host, f"no budget hand-over: {after_rollback(host, ctx, decision).reason}"
             if decision.action in (NONE, REFUSE)
             else "no budget hand-over: step 1 " + ("rolls back" if decision.action == ROLLBACK else "sheds load"))
        return
    yield from _hand_over(ctx, decision, deployment, wait)


def _hand_over(ctx: K8sHost, decision: RestoreDecision, deployment: dict[str, Any], wait: bool
               ) -> Iterator[FunctionCommand]:
    picture = host.get_fact(NodeObjects)
    base = _bare(dict(decision.template))
    try:
        planned, notes, what = budget_template(ctx, deployment, base, picture)
    except UserError as exc:
        yield from refuse(state, host, f"{decision.reason}; {exc} (skipped: {'; '.join(decision.skipped)})")
        return
    prediction = predict_template(planned, ctx.container)
    why = failed_prediction(prediction)
    if why is not None:
        yield from refuse(state, host, f"{decision.reason}; budget's change {what}: {why}")
        return
    summary = (f"budget handover on {ctx.where}: revision {decision.revision} ({decision.replicaset}), the last "
               f"that served, with {what} — chosen by rule: {decision.rule}")
    # on a full pool the write also switches the rollout to maxSurge 0, as every write of a pod template does
    yield from set_template_on_pool(state, host, deployment, planned, action=RESTORE,
                                    reason=f"no revision predicted to serve; revision {decision.revision} with {what}",
                                    summary=summary, prediction=prediction, annotations=notes, picture=picture)
    if wait:
        seconds = ctx.policy.restore.rollout_timeout.total_seconds()
        yield FunctionCommand(wait_rollout, (seconds, "wait for the budget handover's template to roll out"), {})
