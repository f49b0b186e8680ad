"""Runbook step 4 as a pyinfra operation: apply the planner's smallest change that restores headroom.

The planner (``remedies.budget.plan_budget``) ranks every lever within the policy's bounds, smallest
first, and only lists changes the memory model predicts to start with headroom and meet the target
concurrency. This operation applies the first rung — flags, nodeSelector/GPU limit, and for an
``--enforce-eager`` rung the timed toggle's record — and refuses, with one line naming the prediction,
when nothing within policy is predicted to work. ``--max-model-len`` always ends up explicit. On a full pool
the rung's write also switches the rollout to ``maxSurge: 0`` as the pin does (``pin_gpu.surge_switch_for``).

    from vllm_remedy.operations import budget

    budget.smallest_fix(name="Smallest change that restores headroom")
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from pyinfra import host, state
from pyinfra.api import FunctionCommand, operation

from vllm_remedy.errors import UserError
from vllm_remedy.facts.nodes import NodeObjects
from vllm_remedy.kube.errors import KubeError
from vllm_remedy.kube.history import template_of
from vllm_remedy.operations import pin_gpu, workload
from vllm_remedy.operations.util import (
    K8sHost,
    deployment_object,
    k8s_host,
    keeps_its_plan,
    noop,
    pods_fact,
    refuse,
    server_of,
    show,
    with_flags,
)
from vllm_remedy.remedies import enforce_eager
from vllm_remedy.remedies.budget import BudgetRequest, plan_budget, policy_gpu, spelling
from vllm_remedy.remedies.budget.observed import KvObservation
from vllm_remedy.remedies.pin_gpu import apply_template_change, canonical_product, contested, ours_in, plan_pin
from vllm_remedy.remedies.plan import Plan, Step
from vllm_remedy.remedies.predict import (
    Prediction,
    before_world_size,
    caveats,
    failed_prediction,
    pinned_gpu,
    predict_template,
)
from vllm_remedy.remedies.restore import crash_failures
from vllm_remedy.vllm import catalog, engine_env, resolved
from vllm_remedy.vllm.catalog import PRODUCT_LABELS
from vllm_remedy.vllm.memory import EngineSettings
from vllm_remedy.vllm.outcomes import Failure
from vllm_remedy.vllm.parallel import layout_fix, pod_shortfall
from vllm_remedy.vllm.versions import version_from_image

BUDGET = "budget"


def _failure(pods: Mapping[str, Any], container: str | None) -> Failure | None:
    """The most frequent crash of the current revision's pods (None when none crash-loops)."""
    seen = crash_failures(pods, container)
    if not seen:
        return None
    kind = max(seen, key=lambda k: (seen[k], k))
    try:
        return Failure(kind)
    except ValueError:
        return Failure.UNKNOWN


def _logged_kv(pods: Mapping[str, Any]) -> KvObservation | None:
    """The smallest KV cache the current revision's containers logged — tokens, memory, or the estimated maximum
    length a refused start printed (the planner scales every candidate by it)."""
    seen: KvObservation | None = None
    for c in (c for p in pods.get("pods") or [] if p.get("new") for c in p.get("containers") or []):
        got = KvObservation.from_report((c.get("startup") or {}).get("report") or {})
        seen = got.smallest(seen) if got else seen
    return seen


def _on_card(pods: Mapping[str, Any], picture: Mapping[str, Any], product: str) -> Mapping[str, Any]:
    """``pods`` without the rows on a node of ``picture`` that carries another GPU product: a rollout the controller
    has not yet observed still counts the old pods as its own (a StatefulSet's updateRevision lags its spec), and
    what they logged on that card says nothing about this one."""
    elsewhere = set()
    for node in picture.get("nodes") or []:
        labels = (node.get("metadata") or {}).get("labels") or {}
        value = next((labels[k] for k in PRODUCT_LABELS if labels.get(k)), None)
        if value and canonical_product(str(value)) != product:
            elsewhere.add((node.get("metadata") or {}).get("name"))
    rows = [r for r in pods.get("pods") or [] if r.get("node") not in elsewhere]
    return {**pods, "pods": rows}


def _node_gpus(picture: Mapping[str, Any], product: str) -> int | None:
    """GPUs of the biggest node of ``product`` (tensor parallelism cannot span nodes)."""
    counts = []
    for node in picture.get("nodes") or []:
        labels = (node.get("metadata") or {}).get("labels") or {}
        value = next((labels[k] for k in PRODUCT_LABELS if labels.get(k)), None)
        if value and canonical_product(str(value)) == product:
            try:
                counts.append(int(str(((node.get("status") or {}).get("allocatable") or {}).get("nvidia.com/gpu", 0))))
            except ValueError:
                continue
    return max(counts) if counts else None


def plan_for(ctx: K8sHost, template: Mapping[str, Any], gpu: str | None, target_concurrency: float | None,
             picture: Mapping[str, Any], pods: Mapping[str, Any] | None = None,
             pods_run_template: bool = True) -> tuple[Plan, str]:
    """The planner's ladder for the host's server on ``gpu`` (default: ``policy_gpu.product``, else the pinned one);
    ``picture`` is the ``NodeObjects`` fact (how many GPUs the biggest node of that product has); ``pods`` the
    Pods fact's picture when the host's pods are not its Deployment's (an InferenceService's). The KV cache the pods
    logged scales the plan only when they run ``template`` (``pods_run_template``): the handover plans an older
    revision, whose flags the crashing pods' log does not measure."""
    server = server_of(template, ctx.container)
    spec = dict(template.get("spec") or {})
    # the product check and plan --policy plan on (policy_gpu.product), as the pin step before this one pinned it
    label = gpu or policy_gpu.product(ctx.policy, pinned_gpu(spec)) or pinned_gpu(spec)
    if label is None:
        raise UserError(f"{ctx.where}: the template pins no GPU product and the policy names none; pass gpu=...")
    card = catalog.gpu(label)
    model = resolved.model(str(server.model), server.flags.get("revision"))
    # VLLM_ALLOW_LONG_MAX_MODEL_LEN and VLLM_USE_V1 in the pod env, read as the prediction (remedies.predict) does
    version = version_from_image(server.image)
    # a value the release's parser refuses (16Ki, auto before 0.14): planned as its literal, which every step writes
    flags, respelled = spelling.respell(server.flags, version)
    respelled += spelling.overridden(server, flags, version)  # an earlier occurrence it refuses: the kept value
    flags = spelling.without_refused(flags, respelled)  # what argparse refuses is planned without it, never typed
    settings = EngineSettings.from_flags(flags, version, engine_env.env_inputs(server.container), server.hidden)
    pods = _on_card(pods if pods is not None else pods_fact(host), picture, card.product)
    running_on = pinned_gpu(spec)
    same_card = running_on is not None and canonical_product(running_on) == card.product
    # what crashed on another card (the pods on an L4, the plan for the pinned L40S) says nothing about this one
    request = BudgetRequest(model, card, settings, policy=ctx.policy,
                            failure=_failure(pods, ctx.container) if same_card else None,
                            target_concurrency=target_concurrency,
                            node_gpus=_node_gpus(picture, card.product),
                            observed=_logged_kv(pods) if same_card and pods_run_template else None,
                            node_selector=dict(spec.get("nodeSelector") or {}), gpu_label=running_on)
    return spelling.apply(plan_budget(request), respelled, version), card.product


def _schedulable_step(ctx: K8sHost, deployment: Mapping[str, Any], plan: Plan, picture: Mapping[str, Any],
                      refuse_partial: bool = False) -> tuple[Step | None, dict[str, Any] | None, str]:
    """The first rung whose GPU (when it moves the pod) has schedulable capacity on the nodes of ``picture``,
    the template pinned to the label value those nodes really carry (``remedies.pin_gpu``), and what was skipped.
    ``refuse_partial``: skip a move where only some of the replicas fit (``pin_gpu.refuse_partial``); restore's
    hand-over, where nothing serves, takes what fits."""
    template = template_of(deployment)
    skipped = []
    for step in plan.steps:
        if not step.template.node_selector:
            return step, None, ""
        product = step.gpu or next(iter(step.template.node_selector.values()))
        pin = plan_pin(template, pin_gpu.rollout_spec(ctx, deployment), picture["nodes"], picture["pods"],
                       ctx.namespace, ctx.policy.gpu, product, step.template.gpu_limit or ctx.policy.gpu.per_pod,
                       ctx.container, refuse_partial=refuse_partial)
        if pin.refusal is None:
            return step, pin.template, ""
        skipped.append(f"rung {step.rank} ({step.lever} {product}): {pin.refusal}")
    return None, None, ("; skipped " + "; ".join(skipped)) if skipped else ""


def _without_strays(template: dict[str, Any], container: str | None) -> dict[str, Any]:
    """``template`` without the bare words its release's parser leaves over (``vllm serve M extra``): every step is
    planned without them (``spelling.overridden``), so every step's edit removes them, as plan's fix says."""
    server = server_of(template, container)
    words = {shlex.split(w)[0] for w in spelling.stray_words(server, version_from_image(server.image))}
    if not words:
        return template
    edited = server.edit(drop=words)
    containers = template["spec"]["containers"]
    template["spec"]["containers"] = [edited if c.get("name") == server.container_name else c for c in containers]
    return template


def planned_template(ctx: K8sHost, template: Mapping[str, Any], step: Step, now: float, *, pinned: bool = False
                     ) -> tuple[dict[str, Any], dict[str, str]]:
    """``template`` with ``step`` applied (and max-model-len explicit); a temporary rung as a timed toggle."""
    flags = {k: v for k, v in step.set.items() if not (step.temporary and k == enforce_eager.EAGER)}
    if "max-model-len" not in server_of(template, ctx.container).flags and "max-model-len" not in flags:
        flags["max-model-len"] = str(step.prediction.max_model_len)
    planned = _without_strays(with_flags(template, flags, step.unset, container=ctx.container), ctx.container)
    if not pinned:
        planned = apply_template_change(planned, step.template, ctx.container)
    if not step.temporary:
        return planned, {}
    seconds = (int(step.revert_after.total_seconds()) if step.revert_after
               else enforce_eager.ttl_seconds(None, ctx.policy))
    return enforce_eager.switch_on(planned, ctx.keys, now, seconds, ctx.container)


@operation()
@keeps_its_plan
def smallest_fix(gpu: str | None = None, target_concurrency: float | None = None) -> Iterator[FunctionCommand]:
    """
    Apply the smallest change the planner predicts to restore headroom (runbook step 4).

    + gpu: GPU product to plan for; default the one the template pins when the policy's ``gpu.products`` allows
      it, else their first entry (``policy_gpu.product``), else the pinned one (pin it with ``pin_gpu.gpu_product``
      in the same deploy)
    + target_concurrency: concurrent max-length requests the KV cache must hold; default the policy's
      ``peak_concurrency`` × ``confirm.min_concurrency_ratio``

    The ladder, smallest first: explicit ``--max-model-len``, ``--gpu-memory-utilization``,
    ``--max-num-seqs``, ``--max-num-batched-tokens``, fp8 KV cache (policy permitting), tensor
    parallelism, a bigger GPU, and last ``--enforce-eager`` as a timed toggle. Refused with one line when
    no change within policy is predicted to fit. Nothing happens when the current settings fit with
    headroom and ``--max-model-len`` is explicit.

    **Example:**

    .. code:: python

        budget.smallest_fix(name="Smallest change that restores headroom")
    """
    ctx = k8s_host(host)
    deployment = deployment_object(host)
    template = template_of(deployment)
    picture = host.get_fact(NodeObjects)  # one read of every node and GPU pod serves the planner and each rung
    try:
        # vLLM stops before sizing memory when the pod's GPUs cannot hold its engine: no budget rung is a fix, and
        # the planner (which splits the model over TP ranks the pod lacks) would call the start a fit
        server = server_of(template, ctx.container)
        resource = ctx.policy.gpu.resource
        if (short := pod_shortfall(server.flags, server.container, server.image, resource)) is not None:
            yield from refuse(state, host, f"{ctx.where}: {_first_refusal(template, ctx.container, gpu, server.image)}"
                              f"{short}; no budget change fixes it: {layout_fix(resource)}")
            return
        why = unpredictable(server)
        if why is not None:  # the model resolved nowhere (hub): every rung is chosen by a prediction, none is made
            yield from refuse(state, host, f"{ctx.where}: {why}", head="no prediction")
            return
        plan, product = plan_for(ctx, template, gpu, target_concurrency, picture)
        said = caveats(server_of(template, ctx.container))  # the rules, any option not judged
        if plan.verdict == "no_change_needed":
            noop(state, host, f"{ctx.where} fits on {product} with headroom and an explicit --max-model-len "
                 f"({Prediction(product, plan.current, **said).line()})")
            return
        step, pinned, skipped = _schedulable_step(ctx, deployment, plan, picture, pin_gpu.refuse_partial())
        if plan.verdict != "change" or step is None:
            current = Prediction(product, plan.current, **said)
            yield from refuse(state, host, f"{ctx.where}: {plan.problem}; no change within policy "
                              f"{ctx.policy.source} is predicted to fit{skipped} ({current.line()})")
            return
        planned, notes = planned_template(ctx, pinned or template, step, ctx.client.server_time(),
                                          pinned=pinned is not None)
    except UserError as exc:
        yield from refuse(state, host, f"{ctx.where}: {exc}")
        return
    prediction = Prediction(step.gpu or product, step.prediction, **said)
    why = failed_prediction(prediction)
    if why is not None:
        yield from refuse(state, host, f"{step.describe()} on {ctx.where}: {why}")
        return
    show(state, host, [f"problem: {plan.problem}", *(f"note: {n}" for n in plan.notes),
                       *_contested(ctx, deployment, planned, picture)], topic="plan")
    summary = f"budget {ctx.where}: {step.describe()} ({step.lever}, rung {step.rank} of {len(plan.steps)})"
    # on a full pool the rung's write also switches the rollout to maxSurge 0, shown and guarded with it
    yield from pin_gpu.set_template_on_pool(state, host, deployment, planned, action=BUDGET,
                                            reason=f"{step.lever}: {step.reason}", summary=summary,
                                            prediction=prediction, annotations=notes, picture=picture)



def _contested(ctx: K8sHost, deployment: Mapping[str, Any], planned: Mapping[str, Any], picture: Mapping[str, Any]
               ) -> list[str]:
    """The plan's note when a Recreate rollout frees GPUs that other workloads' Pending GPU pods may take before its
    new pods (``remedies.pin_gpu.contested``); [] otherwise, or when the Pending pods cannot be listed."""
    strategy = (deployment.get("spec") or {}).get("strategy") or {}
    if strategy.get("type") != "Recreate":
        return []
    try:  # one cluster-wide read per run (the read snapshot), only for a Recreate write
        pending = ctx.client.list_pods(None, field_selector="status.phase=Pending")
    except KubeError:
        return []
    selector = (deployment.get("spec") or {}).get("selector")
    ours = ours_in([*picture["pods"], *pending], ctx.namespace, selector)
    freed, where, rivals = contested(dict(planned.get("spec") or {}), strategy, picture["nodes"], picture["pods"],
                                     pending, ours)
    if not rivals:
        return []
    return [f"note: Recreate stops every old pod first: the {freed} GPU(s) they free on {', '.join(where)} are "
            f"contested by {len(rivals)} Pending GPU pod(s) of other workloads ({', '.join(rivals[:5])}"
            f"{', ...' if len(rivals) > 5 else ''}), which may take them before the new pods: then those stay Pending"]


#: deploys/budget.py's operations before its wait, in order: (name, operation, keyword arguments). The deploy runs
#: exactly these and ``vllm-remedy drift`` plans exactly these as the fix it reports, so the report never offers
#: a fix the deploy would not make.
FIX: tuple[tuple[str, Callable[..., Any], dict[str, Any]], ...] = (
    ("Revert expired temporary toggles", workload.revert_expired_toggles, {}),
    ("Pin the GPU type", pin_gpu.gpu_product, {"budget_follows": True}),
    ("Smallest change that restores headroom", smallest_fix, {}),
)


def unpredictable(server: Any) -> str | None:
    """Why ``server``'s model has no spec this run (it resolved nowhere: ``hub``, ``connectors.models``), else None."""
    try:
        resolved.model(str(server.model), server.flags.get("revision"))
    except UserError as exc:
        return str(exc)
    return None


def _first_refusal(template: Mapping[str, Any], container: str | None, gpu: str | None, image: str) -> str:
    """How the refusal line opens before the world size: "predicted to fail: ", or the refusal vLLM runs before it
    (``predict.before_world_size``: the words the pod's log ends with) and "then, that fixed: "."""
    found = predict_template(template, container, gpu)
    if not before_world_size(found, version_from_image(image)):
        return "predicted to fail: "
    return f"{failed_prediction(found) or f'predicted {found.outcome}: {found.note}'}; then, that fixed: "
