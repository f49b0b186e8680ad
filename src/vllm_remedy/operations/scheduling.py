"""Where vLLM pods may run, as a pyinfra operation: pin the GPU product (runbook step 4), safely.

``remedies.pin.plan_pin`` decides (label variants, capacity, surge on full nodes); this module reads
the nodes, shows the diff of the pod template *and* of the rollout strategy when it must change, and
writes both in one guarded patch — a pinned template with a surge the nodes cannot host would never
finish rolling out.

    from vllm_remedy.operations import scheduling

    scheduling.gpu_product(name="Pin the GPU type", product="NVIDIA-L40S", gpus=1)
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Iterator, Mapping
from typing import Any

from pyinfra import host, state
from pyinfra.api import FunctionCommand, operation

from vllm_remedy.facts.base import JsonFact
from vllm_remedy.kube.annotations import Keys, action_annotations
from vllm_remedy.kube.client import KubeClient
from vllm_remedy.kube.diff import unified_template_diff
from vllm_remedy.kube.patch import json_patch
from vllm_remedy.operations._plan import keeps_its_plan
from vllm_remedy.operations.util import (
    change_lines,
    k8s_host,
    note,
    observe,
    predict_template,
    refuse,
    show,
    write_command,
)
from vllm_remedy.operations.vllm import deployment_object, failed_prediction, template_of
from vllm_remedy.remedies.pin import plan_pin

PIN = "pin-gpu"


class NodeObjects(JsonFact[dict[str, Any]]):
    """Raw GPU picture for pinning: every Node (all labels kept) and the pods holding GPUs, with our selector.

    ``facts.nodes.GpuNodes`` summarises per node under the first product label it finds; pinning needs
    the value under the *policy's* label key, hence the raw objects.
    """

    def command(self) -> str:
        """The connector's ``k8s-nodes`` verb, the same read ``GpuNodes`` summarises."""
        return "k8s-nodes"

    def build(self, document: dict[str, Any]) -> dict[str, Any]:
        """The raw nodes and GPU pods (empty when absent) so ``plan_pin`` can read the policy's own label key."""
        return {"nodes": list(document.get("nodes") or []), "pods": list(document.get("pods") or []),
                "namespace": document.get("namespace"), "selector": document.get("selector") or {}}


def pin_ops(template: Mapping[str, Any], strategy: Mapping[str, Any] | None, keys: Keys, reason: str,
            client: KubeClient, basis: dict[str, Any], at: float) -> list[dict[str, Any]]:
    """Guarded ops giving ``basis`` the pinned template (+ strategy) and our audit annotations; [] when so."""
    spec = basis.get("spec") or {}
    if spec.get("template") == template and (strategy is None or spec.get("strategy") == strategy):
        return []
    desired = copy.deepcopy(basis)
    desired["spec"]["template"] = copy.deepcopy(dict(template))
    if strategy is not None:
        desired["spec"]["strategy"] = copy.deepcopy(dict(strategy))
    notes = dict((desired.get("metadata") or {}).get("annotations") or {})
    notes.update(action_annotations(keys, PIN, reason, at))
    desired["metadata"]["annotations"] = notes
    return json_patch(basis, desired)


@operation()
@keeps_its_plan
def gpu_product(product: str | None = None, gpus: int | None = None) -> Iterator[FunctionCommand]:
    """
    Pin the vLLM pods to one GPU product (nodeSelector) with ``limits: nvidia.com/gpu`` per pod.

    + product: GPU product as GPU feature discovery names it (``NVIDIA-L40S``); default the policy's
      first ``gpu.products`` entry (no product anywhere: nothing to do)
    + gpus: GPUs per pod (``resources.limits``); default the policy's ``gpu.per_pod``

    The label key is the policy's ``gpu.label`` (GFD, GKE or Karpenter) and the value the one matching
    nodes carry (``-SHARED`` only when ``gpu.allow_shared``; MIG slices only when ``product`` names the
    profile); conflicting product keys are dropped. Refused when no schedulable node of that product can
    take a pod. On full nodes (no free GPU for a surge pod) the RollingUpdate becomes ``maxSurge: 0,
    maxUnavailable: 1`` and the diff shows it.

    **Example:**

    .. code:: python

        scheduling.gpu_product(name="Pin the GPU type", product="NVIDIA-L40S", gpus=1)
    """
    ctx = k8s_host(host)
    product = product or ctx.policy.gpu_product
    if not product:
        return
    gpus = int(gpus if gpus is not None else ctx.policy.gpu.per_pod)
    deployment = deployment_object()
    template = template_of(deployment)
    picture = host.get_fact(NodeObjects)
    plan = plan_pin(template, deployment.get("spec") or {}, picture["nodes"], picture["pods"], ctx.namespace,
                    ctx.policy.gpu, product, gpus, ctx.container)
    if plan.refusal is not None:
        yield from refuse(state, host, f"pin {ctx.where} to {product}: {plan.refusal}")
        return
    if plan.template == template and plan.strategy is None:
        return
    prediction = predict_template(plan.template, ctx.container)
    why = failed_prediction(prediction)
    if why is not None:
        yield from refuse(state, host, f"pin {ctx.where} to {product}: {why}")
        return
    summary = f"pin {ctx.where} to {plan.label}={plan.value} with {gpus} GPU(s) per pod"
    lines = change_lines(ctx, summary, template, plan.template, prediction)
    if plan.strategy is not None:
        current = {"strategy": (deployment.get("spec") or {}).get("strategy") or {}}
        lines += unified_template_diff(current, {"strategy": plan.strategy}, f"{ctx.where} strategy (current)",
                                       f"{ctx.where} strategy (planned)").rstrip("\n").splitlines()
    observe(state, host, ctx.deployment_path, deployment)
    if show(state, host, [*lines, *plan.lines]):
        for text in plan.notes:
            note(host, f"note: {text}")
    reason = f"pin {plan.label}={plan.value}, {gpus} GPU(s) per pod" + (
        "; maxSurge 0 / maxUnavailable 1: no free GPU for a surge pod" if plan.strategy is not None else "")
    build = functools.partial(pin_ops, copy.deepcopy(plan.template), plan.strategy, ctx.keys, reason)
    yield write_command(ctx.deployment_path, build, summary)
