"""Runbook step 4 for a LeaderWorkerSet: pin the GPU type in the leader *and* the worker template, in one write.

``remedies.pin_gpu.plan_pin`` decides for the leader's template (label variants, capacity for every pod of every
group, refusal when no node can take one); ``remedies.lws_pin`` makes the workers follow it. The write replaces
``spec.leaderWorkerTemplate``, guarded by resourceVersion, and the prediction splits the model TP × PP ways.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pyinfra import host, state
from pyinfra.api import FunctionCommand, operation

from vllm_remedy.errors import UserError
from vllm_remedy.facts.leaderworkerset import LeaderWorkerSetState
from vllm_remedy.facts.nodes import NodeObjects
from vllm_remedy.kube import lws_history
from vllm_remedy.kube.client import KubeClient
from vllm_remedy.kube.diff import unified_template_diff
from vllm_remedy.kube.lws_wait import lws_path
from vllm_remedy.kube.rollout import resource_version_test
from vllm_remedy.operations.leaderworkerset import prediction_line, wait_rolled_out
from vllm_remedy.operations.util import k8s_host, keeps_its_plan, noop, observe, refuse, show, write_command
from vllm_remedy.remedies.budget import policy_gpu
from vllm_remedy.remedies.lws_pin import pinned_lwt
from vllm_remedy.remedies.pin_gpu import plan_pin
from vllm_remedy.remedies.predict import failed_prediction, pinned_gpu, predict_template


def _writes(lwt: dict[str, Any]) -> Any:
    """BuildOps: replace the template with ``lwt`` on the basis, guarded; [] once it is in place."""
    def build(client: KubeClient, basis: dict[str, Any], at: float) -> list[dict[str, Any]]:
        if lws_history.lwts_equal(lws_history.lwt_of(basis), lwt):
            return []
        return [resource_version_test(basis), {"op": "replace", "path": "/spec/leaderWorkerTemplate", "value": lwt}]
    return build


@operation()
@keeps_its_plan
def gpu_product(product: str | None = None, gpus: int | None = None, wait: bool = True) -> Iterator[FunctionCommand]:
    """
    Pin every pod of a LeaderWorkerSet to one GPU product with ``gpus`` GPUs per pod, leader and workers alike.

    + product: GPU product as GPU feature discovery names it; default the leader's when the policy's
      ``gpu.products`` allows it, else their first entry (``policy_gpu.product``)
    + gpus: GPUs per pod; default the policy's ``gpu.per_pod``
    + wait: wait until every group is Ready on the pinned template, failing fast on a crash loop
    """
    ctx = k8s_host(host)
    where = f"leaderworkerset {ctx.namespace}/{ctx.deployment}"
    lws = host.get_fact(LeaderWorkerSetState)["leaderworkerset"]
    lwt = lws_history.lwt_of(lws)
    # the product check and plan --policy keep: the leader's when the policy allows it, else the policy's first
    product = product or policy_gpu.product(ctx.policy, pinned_gpu(lws_history.leader_template(lwt).get("spec") or {}))
    if not product:
        noop(state, host, f"no GPU product to pin: policy {ctx.policy.source} names none in gpu.products")
        return
    gpus = int(gpus if gpus is not None else ctx.policy.gpu.per_pod)
    spec = lws.get("spec") or {}
    pods = int(spec.get("replicas", 1) or 0) * int(lwt.get("size", 1) or 1)
    picture = host.get_fact(NodeObjects)
    try:
        lws_history.check_consistent(lwt, where, ctx.container)
        plan = plan_pin(lws_history.leader_template(lwt), {"replicas": pods, "selector": picture["selector"],
                                                           "strategy": {"type": "Recreate"}},
                        picture["nodes"], picture["pods"], ctx.namespace, ctx.policy.gpu, product, gpus, ctx.container)
    except UserError as exc:
        yield from refuse(state, host, f"pin {where} to {product}: {exc}; nothing was changed")
        return
    if plan.refusal is not None:
        yield from refuse(state, host, f"pin {where} to {product}: {plan.refusal}")
        return
    new = pinned_lwt(lwt, plan.template, ctx.policy.gpu.resource, gpus)
    if lws_history.lwts_equal(new, lwt):
        noop(state, host, f"{where} is already pinned to {plan.label}={plan.value} with {gpus} GPU(s) per pod")
        return
    why = lws_history.world_size_shortfall(new, ctx.container, ctx.policy.gpu.resource) or \
        failed_prediction(predict_template(lws_history.leader_template(new), ctx.container))
    if why is not None:
        yield from refuse(state, host, f"pin {where} to {product}: {why}")
        return
    summary = f"pin {where} to {plan.label}={plan.value} with {gpus} GPU(s) per pod, leader and workers"
    path = lws_path(ctx.namespace, ctx.deployment)
    observe(state, host, path, lws)
    show(state, host, [summary, unified_template_diff(lwt, new).rstrip("\n"), *plan.lines,
                       prediction_line(new, 0, ctx.container, ctx.policy.gpu.resource)
                       .replace("revision 0: ", "pinned: ", 1),
                       *([f"warning: {outage}"] if (outage := lws_history.rollout_outage(lws)) else [])])
    yield write_command(path, _writes(new), summary)
    if wait:
        seconds = ctx.policy.restore.rollout_timeout.total_seconds()
        yield FunctionCommand(wait_rolled_out, (seconds, "wait for the pinned template to roll out"), {})
