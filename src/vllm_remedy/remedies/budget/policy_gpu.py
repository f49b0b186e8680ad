"""The plan on the policy's GPU: when the pod's GPU product is not one the policy allows (or the pod pins none), every
rung is planned on the policy's first product and carries the pin; a product it allows is kept.

:func:`product` is that rule, the one place it is written: ``check``'s smallest fix (``drift.manifest_fix``, through
:func:`pin`), ``plan --policy`` (:func:`plan_within_policy`) and ``deploys/budget.py`` (its pin step,
``operations.pin_gpu``, and ``operations.budget.plan_for``) all ask it, so ``plan --policy`` ranks first the change
the other two make. Planned on the L4 the pod is pinned to, the ladder's first rung kept that disallowed card; planned
on the policy's first product, the deploy moved a pod off a second product the policy allows.
"""

from __future__ import annotations

import dataclasses

from vllm_remedy.policy import Policy
from vllm_remedy.remedies.budget.planner import plan_budget
from vllm_remedy.remedies.budget.request import BudgetRequest
from vllm_remedy.remedies.pin_gpu import canonical_product
from vllm_remedy.remedies.plan import Plan, Step, TemplateChange
from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.catalog import PRODUCT_LABELS
from vllm_remedy.vllm.memory import estimate


def product(policy: Policy | None, pinned: str | None) -> str | None:
    """The GPU product a pod pinned to ``pinned`` (a label value, None: no pin) runs on under ``policy``: the policy's
    entry for that product when it allows it, else the policy's first; None when the policy pins no product."""
    if policy is None or not policy.gpu_product:
        return None
    if pinned is not None:
        want = canonical_product(pinned)
        allowed = [p for p in policy.gpu.products if canonical_product(p) == want]
        if allowed:
            return allowed[0]
    return policy.gpu_product


def pin(policy: Policy | None, node_selector: dict[str, str], pinned: str | None) -> TemplateChange | None:
    """The nodeSelector edit onto the policy's GPU when the pod pins none or one the policy does not allow (None: the
    pin stands, or the policy pins nothing), dropping another label scheme's product key as ``check`` does."""
    target = product(policy, pinned)
    if policy is None or target is None or (pinned is not None and canonical_product(pinned) ==
                                            canonical_product(target)):
        return None
    drop = tuple(k for k in node_selector if k in PRODUCT_LABELS and k != policy.gpu.label)
    return TemplateChange(node_selector={policy.gpu.label: target}, drop_node_selector=drop,
                          gpu_resource=policy.gpu.resource)


def pin_strands_ranks(tp: int, gpus: int) -> bool:
    """Whether pinning ``gpus`` GPUs per pod under a ``--tensor-parallel-size tp`` engine leaves ranks without a device
    (vLLM's worker per rank then fails ``torch.cuda.set_device``): the pin alone is then no fix, the budget plan's
    step, which sets the size and the GPU count together (``planner._base``), is. The budget deploy's pin step leaves
    such a pod to that step and ``check`` prints that step as the gpu-pinned fix, by this one rule."""
    return tp > gpus


def plan_within_policy(req: BudgetRequest, pinned: str | None) -> Plan:
    """``plan_budget``, on the policy's GPU with the pin in every step when ``pinned`` (the product the pod is pinned
    to, or the one asked about; None: none) is not one it allows. What the pods showed on the other card (a failure,
    a logged KV cache) says nothing about this one, as the budget deploy holds: the request drops it, a note says so."""
    policy = req.policy
    change = pin(policy, dict(req.node_selector), pinned)
    named = product(policy, pinned)
    target = catalog.find_gpu(named) if named is not None else None
    if policy is None or change is None or target is None:  # no pin to add, or a product the catalog lacks
        return plan_budget(req)
    selector = {k: v for k, v in req.node_selector.items() if k not in change.drop_node_selector}
    moved = dataclasses.replace(req, gpu=target, node_selector=selector | dict(change.node_selector),
                                gpu_label=named, failure=None, observed=None, logged_kv_tokens=None)
    plan = plan_budget(moved)
    where = f"pinned to {pinned}" if pinned else "no GPU product pinned"
    allowed = ", ".join(policy.gpu.products)
    why = (f"{pinned or 'no product pinned'} is not among the policy's GPU products ({allowed}): planned on "
           f"{target.product}, each change pins it (as check's smallest fix and deploys/budget.py's pin step do)")
    notes = [why]
    if req.failure is not None or req.observed is not None or req.logged_kv_tokens:
        notes.append(f"what the log showed on {req.gpu.product} is not evidence about {target.product}")
    steps = tuple(with_pin(s, change) for s in plan.steps)
    if not steps and plan.verdict == "no_change_needed":  # the pin alone is the change
        steps = (Step(rank=1, lever="gpu", reason=f"pin the policy's GPU {target.product}", prediction=plan.current,
                      template=change, gpu=target.product),)
    # the pod's card stays the subject and the current prediction; the ladder's figures are the policy card's
    subject = {**plan.subject, "gpu": req.gpu.product, "gpuMemoryGiB": req.gpu.total_gib,
               "plannedOn": target.product}
    return dataclasses.replace(
        plan, verdict="change" if steps else plan.verdict, steps=steps, current=estimate(req.model, req.gpu,
                                                                                        req.settings),
        problem=f"{where}, policy allows {allowed}; on {target.product}: {plan.problem}",
        subject=subject, notes=(*notes, *plan.notes))


def with_pin(step: Step, change: TemplateChange) -> Step:
    """The step with the pin merged into its template (its own nodeSelector edits win, as ``check`` merges them)."""
    merged = dataclasses.replace(step.template, node_selector={**change.node_selector, **step.template.node_selector},
                                 drop_node_selector=tuple(dict.fromkeys(change.drop_node_selector
                                                                        + step.template.drop_node_selector)))
    return dataclasses.replace(step, template=merged)
