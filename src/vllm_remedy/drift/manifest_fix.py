"""The smallest fix ``check`` offers for a manifest that fails: the step-4 planner's first rung, on the policy's GPU
when the template pins none or one the policy does not allow, and for a LeaderWorkerSet the first rung that keeps the
group's shape.

Apart from the rules (``manifest_check``) because this is the one part of ``check`` that plans: it reaches the budget
planner, the GPU pin and the flag respelling, which judging a workload does not need.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vllm_remedy.policy import Policy
from vllm_remedy.remedies.budget import BudgetRequest, plan_budget, policy_gpu, spelling
from vllm_remedy.remedies.plan import Plan, Step
from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.catalog import GpuSpec, ModelSpec
from vllm_remedy.vllm.memory import EngineSettings
from vllm_remedy.vllm.parallel import TP


def plan_fix(model: ModelSpec, card: GpuSpec, settings: EngineSettings, policy: Policy, spec: Mapping[str, Any],
          pinned: str | None, group: bool = False, respelled: list[spelling.Respelled] | None = None,
          engine_pods: int = 1) -> tuple[Step | None, str]:
    """The planner's smallest step, on the policy's GPU (pinned in the step) when the template's is not allowed;
    for a ``group`` (of ``engine_pods`` pods, which share the policy's GPUs per pod) the first that keeps its shape."""
    pin = policy_gpu.pin(policy, _selector(spec), pinned)  # the runbook pins before it budgets
    target = catalog.find_gpu(policy.gpu_product) if pin is not None and policy.gpu_product else None
    if pin is None or target is None:
        plan = plan_budget(BudgetRequest(model=model, gpu=card, settings=settings, policy=policy,
                                         node_selector=_selector(spec), gpu_label=pinned, engine_pods=engine_pods))
        return _smallest(spelling.apply(plan, respelled or [], settings.version), group)
    selector = {k: v for k, v in _selector(spec).items() if k not in pin.drop_node_selector} | dict(pin.node_selector)
    plan = spelling.apply(plan_budget(BudgetRequest(model=model, gpu=target, settings=settings, policy=policy,
                                                    node_selector=selector, gpu_label=policy.gpu_product,
                                                    engine_pods=engine_pods)),
                          respelled or [], settings.version)
    step, note = _smallest(plan, group)
    if step is None and plan.verdict == "no_change_needed":
        return Step(rank=1, lever="gpu", reason=f"pin the policy's GPU {target.product}", prediction=plan.current,
                    template=pin, gpu=target.product), ""
    if step is None:
        return None, note
    return policy_gpu.with_pin(step, pin), ""


def _selector(spec: Mapping[str, Any]) -> dict[str, str]:
    selector = spec.get("nodeSelector")
    return {str(k): str(v) for k, v in selector.items()} if isinstance(selector, Mapping) else {}


def _smallest(plan: Plan, group: bool = False) -> tuple[Step | None, str]:
    """The planner's first rung (for a ``group``, the first with no new tensor-parallel split), or why there is
    none."""
    steps = [s for s in plan.steps if not group or (TP not in s.set and s.template.gpu_limit is None)]
    if plan.verdict == "change" and steps:
        return steps[0], ""
    if plan.verdict == "change" and group:
        return None, "every rung the planner found changes the group's shape (a new tensor-parallel split)"
    if plan.verdict == "no_fitting_change":
        return None, "no change within the policy's bounds is predicted to start and meet the target"
    return None, ""


def describe_fix(step: Step) -> str:
    """``--max-model-len 16384 nodeSelector ...=NVIDIA-L40S (predicted fits: KV 197,840 tokens, 12.08x at 16384)``."""
    p = step.prediction
    on = f" on {step.gpu}" if step.gpu else ""
    return (f"{step.describe()} (predicted {p.outcome.value}{on}: KV cache {p.kv_cache_tokens:,} tokens, "
            f"maximum concurrency {p.max_concurrency:.2f}x at {p.max_model_len:,})")
