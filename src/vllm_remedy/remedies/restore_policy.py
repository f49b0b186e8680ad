"""What a rollback candidate's own template says against the policy: its GPU and its predicted concurrency (pure).

Why: a revision can run a known-good unit's image and flags (so "pinned in policy") on a GPU product the policy does
not allow, predicted below the policy's peak concurrency; restored, the next drift run calls it DRIFTED and peak load
preempts or OOMs. Restore ranks such a candidate below every one the policy allows (``kube.rollout.choose_rollback``'s
``conflicts``) and names the conflict when it must take it.

The judgement is drift's ``gpu-pinned`` and ``concurrency`` rules, read at this layer so restore can ask it:
``gpu_problems`` and ``concurrency_problem`` give the words drift prints, on the same inputs (the template's pinned
product and GPU count; the prediction drift makes — on the pinned product, else the policy's), and
``tests/remedies/test_restore_policy.py`` holds them to drift's verdicts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from vllm_remedy.kube.gpus import SHARED_SUFFIX, pod_gpu_request
from vllm_remedy.kube.history import Revision
from vllm_remedy.policy import Policy
from vllm_remedy.remedies.pin_gpu import canonical_product
from vllm_remedy.remedies.predict import Prediction, failed_prediction, pinned_gpu, predict_template


def gpu_problems(policy: Policy, gpu: str | None, gpus_per_pod: int) -> list[str]:
    """Drift's ``gpu-pinned`` problems for a pod pinned to ``gpu`` (a label value, None: none) with ``gpus_per_pod``
    GPUs; [] when the policy pins no product or the pin is one it allows."""
    rule = policy.gpu
    if not rule.pinned:
        return []
    wanted = {canonical_product(p) for p in rule.products}
    problems = []
    if gpu is None:
        problems.append(f"no GPU product pinned (policy: {', '.join(rule.products)} under {rule.label})")
    elif canonical_product(gpu) not in wanted:
        problems.append(f"pinned to {gpu}, policy allows {', '.join(rule.products)}")
    elif gpu.upper().endswith(SHARED_SUFFIX) and not rule.allow_shared:
        problems.append(f"pinned to time-sliced {gpu} (gpu.allow_shared is false)")
    if gpus_per_pod != rule.per_pod:
        problems.append(f"{gpus_per_pod} x {rule.resource} per pod, policy wants {rule.per_pod}")
    return problems


def predicted(template: Mapping[str, Any], policy: Policy, container: str | None = None) -> Prediction:
    """The prediction drift makes of a template: on the product it pins, else on the policy's."""
    prediction = predict_template(template, container)
    if prediction.estimate is None and prediction.gpu is None and policy.gpu_product:
        prediction = predict_template(template, container, gpu=policy.gpu_product)
    return prediction


def concurrency_problem(policy: Policy, prediction: Prediction) -> str | None:
    """Drift's ``concurrency`` words for a start predicted to fit below the policy's peak concurrency; None otherwise
    (no prediction is no verdict, and a start predicted to fail is evidence, weighed apart)."""
    e = prediction.estimate
    if e is None or failed_prediction(prediction) is not None:
        return None
    if e.max_concurrency < policy.peak_concurrency:
        return (f"predicted maximum concurrency {e.max_concurrency:.2f}x on {prediction.gpu} is below the policy's "
                f"peak {policy.peak_concurrency}")
    return None


def policy_conflicts(policy: Policy, container: str | None = None) -> Callable[[Revision], str | None]:
    """``choose_rollback``'s ``conflicts``: what drift would flag in a revision once restored (GPU, concurrency),
    in drift's words, or None."""
    def conflict(rev: Revision) -> str | None:
        spec = rev.template.get("spec") or {}
        problems = gpu_problems(policy, pinned_gpu(spec), pod_gpu_request(spec))
        short = concurrency_problem(policy, predicted(rev.template, policy, container))
        return "; ".join([*problems, *([short] if short else [])]) or None

    return conflict
