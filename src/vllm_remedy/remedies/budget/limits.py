"""What the planner may do: flag bounds, target concurrency and safety margins, from a policy or defaults.

Without a policy, and for any bound the policy leaves open, the planner reads the shipped default policy
(:data:`~vllm_remedy.policy.DEFAULT_POLICY`: utilization 0.5–0.95, TP ≤ 8, enforce-eager for at most 2h,
peak concurrency 8), so a plan made without a policy is never looser than one made with it. fp8 KV cache
stays refused without a policy that allows it after an evaluation.

The constants below are the planner's own (estimation margins, proposal granularity, floors where the
default policy deliberately sets no bound); policy defaults live only in the policy package.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import timedelta

from vllm_remedy.policy import DEFAULT_POLICY, FractionBounds, IntBounds, KvCacheFp8, Policy
from vllm_remedy.vllm.catalog import GpuSpec
from vllm_remedy.vllm.memory.kv_margin import KV_ESTIMATE_MARGIN, KV_MARGIN_PERCENTILE
from vllm_remedy.vllm.versions import rules

# Device memory that must stay free after the predicted peak (weights, activations, KV, graphs, context,
# other processes): covers allocator fragmentation and the profiled terms' estimation error (≤ 10 % of
# small terms). 3 % of the card, at least 0.5 GiB.
HEADROOM_FRACTION = 0.03
HEADROOM_MIN_GIB = 0.5
# One full-length request must fit with 5 % of KV to spare even when the target is a single request.
MIN_CONCURRENCY = 1.05
# When the log shows a failure the estimator did not predict, a step must improve the failing quantity by
# at least this much over the current prediction (the model is demonstrably optimistic there).
MISMATCH_MARGIN = 0.10
# Floors for proposals when the policy sets no minimum. Not policy defaults: the default policy leaves
# these flags unbounded (drift does not judge them), but the planner must not propose less.
MAX_LEN_FLOOR = 2048  # below this a chat template plus a question no longer fits
MNBT_FLOOR = 2048
LEN_STEP = 256  # proposed max-model-len values are multiples of this (readable, block-aligned)


@dataclass(frozen=True)
class Limits:
    """Every bound a step must respect, resolved once per plan."""

    target: float  # peak concurrent requests
    required: float  # maximum concurrency a step must predict (target × confirm ratio, ≥ MIN_CONCURRENCY)
    util_min: float
    util_max: float
    len_floor: int
    len_max: int | None  # policy max (None: unbounded)
    len_preferred: int | None
    seqs_min: int
    seqs_max: int | None
    mnbt_min: int
    mnbt_max: int | None
    tp_min: int
    tp_max: int
    fp8_allowed: bool
    fp8_value: str  # the spelling to write (the policy's first fp8 value, else "fp8")
    fp8_why_not: str | None
    eager_allowed: bool
    eager_max: timedelta
    products: tuple[str, ...]  # policy's GPU products (empty: any bigger catalog product)
    selector_key: str
    gpu_resource: str
    # Share of the predicted KV cache a step must be able to lose and still hold max-model-len and the target:
    # the estimator's held-out error (kv_margin.KV_ESTIMATE_MARGIN), or the policy's budget.kv_margin.
    kv_margin: float = KV_ESTIMATE_MARGIN
    kv_margin_from_policy: bool = False
    # GPUs a pod may ask for: the policy's gpu.per_pod when it pins a product (drift's gpu-pinned rule holds the pod
    # to that count there), so no tensor-parallel rung asks for more; None: no such bound (no policy, or no pin).
    gpus_per_pod: int | None = None

    @property
    def tp_lever_max(self) -> int:
        """The largest TP size a rung may raise to: the flag's bound, the node's GPUs and the policy's GPUs per pod."""
        return min(self.tp_max, self.gpus_per_pod) if self.gpus_per_pod is not None else self.tp_max

    @property
    def margin_phrase(self) -> str:
        """The margin and what it covers, as every plan prints it."""
        derived = f"covers the estimator's error in {KV_MARGIN_PERCENTILE} % of held-out startup logs"
        if not self.kv_margin_from_policy:
            return f"{_pct(self.kv_margin)} KV estimate margin ({derived})"
        return (f"{_pct(self.kv_margin)} KV estimate margin (policy budget.kv_margin; the derived "
                f"{_pct(KV_ESTIMATE_MARGIN)} {derived})")

    def headroom_for(self, gpu: GpuSpec, version: str | None) -> float:
        """GiB that must stay free on ``gpu`` after the predicted peak; none on a release that sizes the KV cache
        from memory measured after warmup (0.34's extensible cache): vLLM keeps its own margin free there
        (max(1 GiB, 0.75 x the transient peak), already in the predicted peak) and an error in the profiled terms
        changes the cache's size, which the KV estimate margin covers, not the peak; a second margin on top would
        only refuse the release's own default utilization."""
        if rules(version).kv_sized_after_warmup:
            return 0.0
        return max(HEADROOM_MIN_GIB, HEADROOM_FRACTION * gpu.total_gib)


def limits(policy: Policy | None, gpu: GpuSpec, target: float | None, node_gpus: int | None) -> Limits:
    """Resolve the bounds for one plan; ``target``/``node_gpus`` from the command line win over the policy."""
    p = policy
    base = p or DEFAULT_POLICY  # scalar settings: no policy means the shipped default's
    base_util = _fraction(DEFAULT_POLICY, "gpu-memory-utilization")
    base_tp = _ints(DEFAULT_POLICY, "tensor-parallel-size")
    assert base_util and base_util.min and base_util.max and base_tp and base_tp.min and base_tp.max
    peak = float(target) if target is not None else float(base.peak_concurrency)
    ratio = base.confirm.min_concurrency_ratio
    util = _fraction(p, "gpu-memory-utilization")
    length = _ints(p, "max-model-len")
    seqs = _ints(p, "max-num-seqs")
    mnbt = _ints(p, "max-num-batched-tokens")
    tp = _ints(p, "tensor-parallel-size")
    tp_max = tp.max if tp and tp.max else base_tp.max
    if node_gpus is not None:
        tp_max = min(tp_max, node_gpus)
    fp8, why = _fp8(p, gpu)
    return Limits(
        target=peak,
        required=max(peak * ratio, MIN_CONCURRENCY),
        util_min=util.min if util and util.min is not None else base_util.min,
        util_max=util.max if util and util.max is not None else base_util.max,
        len_floor=length.min if length and length.min else MAX_LEN_FLOOR,
        len_max=length.max if length else None,
        len_preferred=length.preferred if length else None,
        seqs_min=max(seqs.min if seqs and seqs.min else 1, math.ceil(peak)),
        seqs_max=seqs.max if seqs else None,
        mnbt_min=mnbt.min if mnbt and mnbt.min else MNBT_FLOOR,
        mnbt_max=mnbt.max if mnbt else None,
        tp_min=tp.min if tp and tp.min else base_tp.min,
        tp_max=tp_max,
        fp8_allowed=fp8,
        fp8_value=_fp8_value(p),
        fp8_why_not=why,
        eager_allowed=base.enforce_eager.allowed,
        eager_max=base.enforce_eager.max_duration,
        products=tuple(base.gpu.products),
        selector_key=base.gpu.label,
        gpu_resource=base.gpu.resource,
        kv_margin=KV_ESTIMATE_MARGIN if base.budget.kv_margin is None else base.budget.kv_margin,
        kv_margin_from_policy=base.budget.kv_margin is not None,
        gpus_per_pod=p.gpu.per_pod if p is not None and p.gpu.pinned else None,
    )


def _pct(fraction: float) -> str:
    return f"{fraction * 100:.3g} %"


def margin_shortfall(spare: float, margin: float) -> str:
    """``fits by 6 %, below the 16 % estimate margin`` (the spare share rounded down, so it never reads as the
    margin itself)."""
    return f"fits by {max(math.floor(spare * 100), 0)} %, below the {_pct(margin)} estimate margin"


def _fraction(policy: Policy | None, flag: str) -> FractionBounds | None:
    bounds = policy.flag_bounds(flag) if policy else None
    return bounds if isinstance(bounds, FractionBounds) else None


def _ints(policy: Policy | None, flag: str) -> IntBounds | None:
    bounds = policy.flag_bounds(flag) if policy else None
    return bounds if isinstance(bounds, IntBounds) else None


def _fp8_value(policy: Policy | None) -> str:
    choices = policy.flags.kv_cache_dtype if policy else None
    listed = [v for v in (choices.allowed if choices else ()) if KvCacheFp8.is_fp8(v)]
    return listed[0] if listed else "fp8"


def _fp8(policy: Policy | None, gpu: GpuSpec) -> tuple[bool, str | None]:
    """fp8 KV cache needs both: hardware support and a policy that allows it after an evaluation."""
    if not gpu.fp8:
        return False, f"{gpu.product} (compute capability {gpu.compute_capability}) has no fp8 KV-cache support"
    if policy is None:
        return False, "no policy allows it (fp8 KV cache changes answers; allow it after an evaluation)"
    if not policy.kv_cache_fp8.allowed:
        return False, "policy forbids it (kv_cache_fp8.status)"
    choices = policy.flags.kv_cache_dtype
    if choices is not None and not any(KvCacheFp8.is_fp8(v) for v in choices.allowed):
        return False, "policy's flags.kv-cache-dtype.allowed lists no fp8 value"
    return True, None
