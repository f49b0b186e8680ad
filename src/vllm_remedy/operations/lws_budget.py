"""Runbook step 4 on a LeaderWorkerSet: the planner's smallest predicted-safe change, in leader and workers alike.

The planner is the Deployment's (``remedies.budget.plan_budget``), asked about the group's engine: the leader's
flags with pipeline stages counted as tensor-parallel ranks (``vllm.parallel.group_flags``: each GPU holds
1/(TP×PP) of the model), so a 32B model over two 48 GB cards is planned as one engine over two GPUs, not as one
card holding all of it. Its first rung the group can take is applied to the leader's template as
``operations.budget.planned_template`` applies it to a Deployment's (``--max-model-len`` always explicit, an
``--enforce-eager`` rung as a timed toggle recorded on the set) and the workers follow (``remedies.lws_flags``).

Rungs that change the group's shape are skipped, saying so: a new ``--tensor-parallel-size`` changes how many GPUs
each pod asks for and how the group's ``size`` splits the model, which is a new LWS, not a remediation. A bigger
GPU rung is pinned as ``remedies.pin_gpu.plan_pin`` pins the leader, for every pod of every group.

    from vllm_remedy.operations import lws_budget

    for name, operation, arguments in lws_budget.FIX:
        operation(name=name, **arguments)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pyinfra import host, state
from pyinfra.api import FunctionCommand, operation

from vllm_remedy.errors import UserError
from vllm_remedy.facts.nodes import NodeObjects
from vllm_remedy.operations import lws_pin
from vllm_remedy.operations.budget import BUDGET, _failure, _logged_kv, _node_gpus, planned_template, unpredictable
from vllm_remedy.operations.lws_eager import due_revert, reverted
from vllm_remedy.operations.lws_flags import LwsView, planned_lwt, refuse_failing, view, write_lwt
from vllm_remedy.operations.util import k8s_host, keeps_its_plan, noop, refuse, server_of, show
from vllm_remedy.remedies.budget import BudgetRequest, plan_budget, policy_gpu, spelling
from vllm_remedy.remedies.pin_gpu import canonical_product, plan_pin
from vllm_remedy.remedies.plan import Plan, Step
from vllm_remedy.remedies.predict import Prediction, caveats, pinned_gpu
from vllm_remedy.vllm import catalog, engine_env, resolved
from vllm_remedy.vllm.memory import EngineSettings
from vllm_remedy.vllm.parallel import TP, group_flags, world_size
from vllm_remedy.vllm.versions import version_from_image


def plan_group(got: LwsView, gpu: str | None, target_concurrency: float | None, picture: Mapping[str, Any]
               ) -> tuple[Plan, str]:
    """The planner's ladder for the group's engine on ``gpu`` (default: ``policy_gpu.product``, else the pinned one)."""
    ctx = got.ctx
    server = server_of(got.leader, ctx.container)
    spec = dict(got.leader.get("spec") or {})
    label = gpu or policy_gpu.product(ctx.policy, pinned_gpu(spec)) or pinned_gpu(spec)  # as lws_pin pinned it
    if label is None:
        raise UserError(f"{ctx.where}: the leader's template pins no GPU product and the policy names none; "
                        "pass gpu=...")
    card = catalog.gpu(label)
    model = resolved.model(str(server.model), server.flags.get("revision"))
    version = version_from_image(server.image)
    flags, respelled = spelling.respell(group_flags(server.flags), version)  # a refused spelling: its literal
    respelled += spelling.overridden(server, spelling.respell(dict(server.flags), version)[0], version)
    settings = EngineSettings.from_flags(flags, version, engine_env.env_inputs(server.container),  # env as predicted
                                         server.hidden)
    running_on = pinned_gpu(spec)
    same_card = running_on is not None and canonical_product(running_on) == card.product
    pods = got.pods()
    world = world_size(server.flags)
    # the group's world already spans nodes: one node's GPU count bounds tensor parallelism only for a one-pod engine
    node_gpus = _node_gpus(picture, card.product) if world == 1 else None
    request = BudgetRequest(model, card, settings, policy=ctx.policy,
                            failure=_failure(pods, ctx.container) if same_card else None,
                            target_concurrency=target_concurrency, node_gpus=node_gpus,
                            observed=_logged_kv(pods) if same_card else None,
                            node_selector=dict(spec.get("nodeSelector") or {}), gpu_label=running_on,
                            engine_pods=int(got.lwt.get("size", 1) or 1))  # the group's pods share its GPUs
    return spelling.apply(plan_budget(request), respelled, version), card.product


def _group_step(got: LwsView, plan: Plan, picture: Mapping[str, Any]
                ) -> tuple[Step | None, dict[str, Any] | None, str]:
    """The first rung the group can take: no new tensor-parallel split, and (moving to another GPU) capacity for
    every pod of every group; the leader pinned to the label value those nodes carry; what was skipped."""
    ctx = got.ctx
    spec = got.lws.get("spec") or {}
    pods = int(spec.get("replicas", 1) or 0) * int(got.lwt.get("size", 1) or 1)
    skipped = []
    for step in plan.steps:
        if TP in step.set or step.template.gpu_limit is not None:
            skipped.append(f"rung {step.rank} ({step.lever}): a new tensor-parallel split changes the group's shape "
                           "(GPUs per pod, size), not a flag")
            continue
        if not step.template.node_selector:
            return step, None, _skipped(skipped)
        product = step.gpu or next(iter(step.template.node_selector.values()))
        gpus = int(((server_of(got.leader, ctx.container).container.get("resources") or {}).get("limits") or {})
                   .get(ctx.policy.gpu.resource) or ctx.policy.gpu.per_pod)
        shape = {"replicas": pods, "selector": picture["selector"], "strategy": {"type": "Recreate"}}
        pin = plan_pin(got.leader, shape, picture["nodes"], picture["pods"], ctx.namespace, ctx.policy.gpu, product,
                       gpus, ctx.container)
        if pin.refusal is None:
            return step, pin.template, _skipped(skipped)
        skipped.append(f"rung {step.rank} ({step.lever} {product}): {pin.refusal}")
    return None, None, _skipped(skipped)


def _skipped(lines: list[str]) -> str:
    return ("; skipped " + "; ".join(lines)) if lines else ""


@dataclass(frozen=True)
class GroupFix:
    """The budget's write on a set: the new leaderWorkerTemplate, the rung and what to say with it."""

    new: dict[str, Any]
    step: Step
    plan: Plan
    notes: dict[str, str | None]
    skipped: str


def plan_fix(got: LwsView, gpu: str | None, target_concurrency: float | None) -> GroupFix | tuple[str, str]:
    """What :func:`smallest_fix` does on ``got``: its write, or ("noop" | "refuse", the one line). UserError when
    the set cannot be planned on."""
    ctx = got.ctx
    picture = host.get_fact(NodeObjects)
    plan, product = plan_group(got, gpu, target_concurrency, picture)
    said = caveats(server_of(got.leader, ctx.container))  # the rules, any option not judged
    if plan.verdict == "no_change_needed":
        return ("noop", f"{ctx.where} fits on {product} with headroom and an explicit --max-model-len "
                f"({Prediction(product, plan.current, **said).line()})")
    step, pinned, skipped = _group_step(got, plan, picture)
    if plan.verdict != "change" or step is None:
        current = Prediction(product, plan.current, **said)
        # an expired toggle's revert may have been written before this step: the budget itself changed nothing
        return ("refuse", f"{ctx.where}: {plan.problem}; no change within policy {ctx.policy.source} the group can "
                f"take is predicted to fit{skipped} ({current.line()}); the budget changed nothing")
    leader, notes = planned_template(ctx, pinned or got.leader, step, ctx.client.server_time(),
                                     pinned=pinned is not None)
    return GroupFix(planned_lwt(got, leader), step, plan, dict(notes), skipped)


@operation()
@keeps_its_plan
def revert_unless_fixed() -> Iterator[FunctionCommand]:
    """
    Revert expired temporary toggles on a LeaderWorkerSet (``lws_eager.revert_expired_toggles``) — unless the budget's
    smallest change (:func:`smallest_fix`, next in ``FIX``) will write the set: that write takes the revert in, so a
    toggle due and a budget change are one guarded write of ``spec.leaderWorkerTemplate``, not two.
    """
    try:
        base, _, said = due_revert(view())
        deferred = bool(said) and isinstance(plan_fix(base, None, None), GroupFix)
    except UserError:
        deferred = False  # the revert's own body says why, in one line
    if deferred:
        noop(state, host, f"expired toggles on {base.ctx.where} come off in the budget's write below: "
             f"{'; '.join(said)}")
        return
    yield from reverted()


@operation()
@keeps_its_plan
def smallest_fix(gpu: str | None = None, target_concurrency: float | None = None) -> Iterator[FunctionCommand]:
    """
    Apply the planner's smallest change predicted to restore headroom to a LeaderWorkerSet, in the leader's and the
    workers' templates alike (runbook step 4).

    + gpu: GPU product to plan for; default the leader's when the policy's ``gpu.products`` allows it, else their
      first entry (``policy_gpu.product``), else the leader's (pin it with ``lws_pin.gpu_product`` in the same deploy)
    + target_concurrency: as ``budget.smallest_fix``

    Planned on the set with its expired toggles reverted (``lws_eager.due_revert``), which the same write then drops:
    one write. Refused with one line when no change within policy the group can take is predicted to fit. Nothing
    happens when the current settings fit with headroom and ``--max-model-len`` is explicit.
    """
    try:
        got = view()
        ctx = got.ctx
        why = unpredictable(server_of(got.leader, ctx.container))
        if why is not None:  # the model resolved nowhere: every rung is chosen by a prediction, none is made
            yield from refuse(state, host, f"{ctx.where}: {why}", head="no prediction")
            return
        base, drops, said = due_revert(got)
        fix = plan_fix(base, gpu, target_concurrency)
    except UserError as exc:
        where = k8s_host(host).where
        yield from refuse(state, host, str(exc) if str(exc).startswith(where) else f"{where}: {exc}")
        return
    if not isinstance(fix, GroupFix):
        if fix[0] == "noop":
            noop(state, host, fix[1])
        else:
            yield from refuse(state, host, fix[1])
        return
    step, plan = fix.step, fix.plan
    why = refuse_failing(got, fix.new, step.describe())
    if why is not None:
        yield from refuse(state, host, why)
        return
    show(state, host, [f"problem: {plan.problem}", *(f"note: {n}" for n in plan.notes),
                       *([f"note: {fix.skipped[2:]}"] if fix.skipped else [])], topic="plan")
    revert = f"; revert expired toggles: {'; '.join(said)}" if said else ""
    summary = (f"budget {ctx.where}, leader and workers: {step.describe()} ({step.lever}, rung {step.rank} of "
               f"{len(plan.steps)}){revert}")
    yield from write_lwt(got, fix.new, action=BUDGET, reason=f"{step.lever}: {step.reason}{revert}", summary=summary,
                         annotations={**drops, **fix.notes})


#: deploys/budget.py's operations for a LeaderWorkerSet before its wait, in order, as ``budget.FIX`` is for a
#: Deployment, pinning before the smallest change. The pin comes before the revert of expired toggles here:
#: ``operations.lws_pin`` plans on the set as read, not as this run's earlier operations leave it, so after a planned
#: revert its --dry diff would be planned on a set -y never sees; the revert and the fix plan on what the pin leaves.
FIX: tuple[tuple[str, Callable[..., Any], dict[str, Any]], ...] = (
    ("Pin the GPU type of leader and workers", lws_pin.gpu_product, {"wait": False}),
    ("Revert expired temporary toggles", revert_unless_fixed, {}),
    ("Smallest change that restores headroom, leader and workers", smallest_fix, {}),
)
