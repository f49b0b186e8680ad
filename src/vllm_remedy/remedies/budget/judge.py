"""Whether a candidate is safe to propose, and the longest max-model-len that keeps it safe.

"Safe" is stricter than the estimator's ``fits``: the predicted peak leaves a headroom margin on the card,
the predicted KV cache, less the estimate margin (the estimator's held-out error), still covers max-model-len
at the target concurrency, vLLM's own argument checks pass, and — when a failure was observed — the candidate
improves the very quantity that failed.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass, field

from vllm_remedy.remedies.budget.limits import LEN_STEP, MISMATCH_MARGIN, Limits
from vllm_remedy.vllm.catalog import GpuSpec, ModelSpec
from vllm_remedy.vllm.failures import FAILURES
from vllm_remedy.vllm.memory import EngineSettings, Estimate, estimate, resolve
from vllm_remedy.vllm.memory.core import batch_refused, weights_overflow
from vllm_remedy.vllm.outcomes import Failure

#: ``estimate`` and ``resolve`` are pure over frozen inputs; a fleet plans the same (model, GPU, settings) on many
#: Deployments (a drift check of 500 hosts: ~1,600 candidates per drifted host), so one process keeps answers.
_estimate = functools.lru_cache(maxsize=1 << 13)(estimate)
_resolve = functools.lru_cache(maxsize=1 << 13)(resolve)


@dataclass
class Judge:
    """Estimates (cached: the ladder revisits the same settings often) and the acceptance rule."""

    model: ModelSpec
    limits: Limits
    current: Estimate
    current_settings: EngineSettings
    failure: Failure | None = None
    kv_scale: float = 1.0  # logged / predicted KV cache when a log showed less than predicted (``observed``)
    mismatch: bool = False  # the log shows a failure the estimator did not predict
    kv_deficit_gib: float = 0.0  # GiB per GPU the log had less than predicted at its settings (``observed``)
    _cache: dict[tuple[EngineSettings, GpuSpec], Estimate] = field(default_factory=dict, repr=False)

    def estimate(self, settings: EngineSettings, gpu: GpuSpec) -> Estimate:
        """``estimate`` memoised per (settings, GPU): the length search and each lever's combinations ask
        for the same candidate many times."""
        key = (settings, gpu)
        est = self._cache.get(key)
        if est is None:
            est = self._cache[key] = _estimate(self.model, gpu, settings)
        return est

    def accept(self, settings: EngineSettings, gpu: GpuSpec) -> Estimate | None:
        """The estimate when the candidate is safe to propose, else None."""
        return self._accept(settings, gpu, self.limits.kv_margin)

    def spare(self, est: Estimate) -> float:
        """The share of the predicted KV cache this start could lose and still hold the required concurrency of
        max-model-len requests (negative: short even as predicted)."""
        held = est.max_concurrency * self.factor(est)
        return 1 - self.limits.required / held if held > 0 else -1.0

    def factor(self, est: Estimate) -> float:
        """The share of ``est``'s predicted KV cache the log lets the planner count on: the logged/predicted ratio,
        or less where the shortfall in GiB is a larger part of this candidate's cache (a lower utilization)."""
        k = self.kv_scale
        if self.kv_deficit_gib > 0 and est.kv_cache_gib > 0:
            k = min(k, max(0.0, (est.kv_cache_gib - self.kv_deficit_gib) / est.kv_cache_gib))
        return k

    def shown(self, est: Estimate) -> Estimate:
        """``est`` with its KV cache scaled to what the log showed: what a step records and prints, so neither reads
        the unscaled cache the log already contradicted."""
        k = self.factor(est)
        if k >= 1.0:
            return est
        return dataclasses.replace(est, kv_cache_gib=est.kv_cache_gib * k, kv_cache_tokens=int(est.kv_cache_tokens * k),
                                   gpu_blocks=int(est.gpu_blocks * k), max_concurrency=est.max_concurrency * k)

    def margin_only(self, settings: EngineSettings, gpu: GpuSpec) -> float | None:
        """``spare`` when the estimate margin is all that refuses the candidate (safe on the point estimate), else
        None — for "fits by 6 %, below the 16 % estimate margin"."""
        if self.limits.kv_margin <= 0 or self.accept(settings, gpu) is not None:
            return None
        est = self._accept(settings, gpu, 0.0)
        return self.spare(est) if est is not None else None

    def _accept(self, settings: EngineSettings, gpu: GpuSpec, margin: float) -> Estimate | None:
        est = self.estimate(settings, gpu)
        if not est.fits or est.total_gib - est.peak_gib < self.limits.headroom_for(gpu, settings.version):
            return None
        if self.spare(est) < margin:  # the KV cache less the margin must still hold the target
            return None
        # a batch vLLM refuses (``batch_short``) is already not ``fits``: ``estimate`` walks the scheduler config's
        # refusal in every release's order (``refusal_order.first_refusal``), so it is not asked again here
        return est if self.addresses_failure(est, settings) else None

    def never_loads(self, settings: EngineSettings, gpu: GpuSpec) -> bool:
        """The weights alone overflow ``gpu`` at these settings: no utilization or max-model-len is safe
        (``core.weights_overflow``)."""
        return weights_overflow(self.model, gpu, settings)

    def chunked(self, settings: EngineSettings, gpu: GpuSpec) -> bool:
        """Whether vLLM chunks prefills at these settings (else the batch bounds max-model-len)."""
        return _resolve(self.model, gpu, settings).chunked_prefill

    def batch_short(self, settings: EngineSettings, gpu: GpuSpec) -> bool:
        """vLLM refuses max-num-batched-tokens below max-model-len without chunked prefill (``batch_refused``: V0's
        _verify_args, V1's verify_max_model_len from 0.11.1)."""
        return batch_refused(_resolve(self.model, gpu, settings))

    def addresses_failure(self, est: Estimate, settings: EngineSettings) -> bool:
        """A step must raise the quantity the observed failure ran short of (the registry's ``short_of``), by a
        margin when the estimator had not predicted that failure."""
        short_of = FAILURES[self.failure].short_of if self.failure is not None else None
        if short_of is None:
            return True
        up = 1 + (MISMATCH_MARGIN if self.mismatch else 0.0)
        return _RAISES[short_of](self.current, est, self.current_settings, settings, up)

    def longest(self, settings: EngineSettings, gpu: GpuSpec, cap: int,
                above: int = -1) -> tuple[EngineSettings, Estimate] | None:
        """The largest max-model-len in [floor, cap] (a multiple of LEN_STEP, or the cap itself) that is safe.

        Shorter requests need less KV and (no chunked prefill) smaller profile batches, so safety is
        monotone in the length and a binary search over the multiples finds the largest.
        ``above``: the caller keeps only a length longer than this one, so the search stops with None as soon as it
        can no longer end above it (the same probes in the same order, the rest left out): the ladder weighs dozens
        of candidates against the best rung so far, most of which only end below it.
        """
        floor = min(self.limits.len_floor, cap)

        def at(length: int) -> tuple[EngineSettings, Estimate] | None:
            s = vary(settings, max_model_len=length)
            est = self.accept(s, gpu)
            return (s, est) if est is not None else None

        top = at(cap)
        if top is not None:
            return top
        best = at(floor)
        if best is None:
            return None
        lo, hi = floor // LEN_STEP + 1, (cap - 1) // LEN_STEP  # multiples strictly between floor and cap
        while lo <= hi:
            if best[1].max_model_len <= above and hi * LEN_STEP <= above:
                return None  # what it would return is at most ``best`` or ``hi``'s length: not above ``above``
            mid = (lo + hi) // 2
            got = at(mid * LEN_STEP)
            if got is not None:
                best, lo = got, mid + 1
            else:
                hi = mid - 1
        return best if best[1].max_model_len > above else None


def vary(settings: EngineSettings, **changes: object) -> EngineSettings:
    """``dataclasses.replace(settings, **changes)``, validated the same way (``__post_init__``), without rebuilding
    every field through ``__init__``: the length search and the utilization lever build thousands per plan, and that
    rebuild was the larger part of plan time (bench/bench_plan.py, 2026-12-06)."""
    out = copy.copy(settings)
    for name, value in changes.items():
        object.__setattr__(out, name, value)
    out.__post_init__()
    return out


# The registry's ``short_of`` quantity → whether a candidate (est, settings) raises it over the current
# (cur, cur_s) by the factor ``up``.
_Raises = Callable[[Estimate, Estimate, EngineSettings, EngineSettings, float], bool]


def _max_concurrency(cur: Estimate, est: Estimate, cur_s: EngineSettings, s: EngineSettings, up: float) -> bool:
    return est.max_concurrency > cur.max_concurrency * up


def _kv_cache(cur: Estimate, est: Estimate, cur_s: EngineSettings, s: EngineSettings, up: float) -> bool:
    return est.kv_cache_gib > max(cur.kv_cache_gib, 0.0) * up


def _weights_room(cur: Estimate, est: Estimate, cur_s: EngineSettings, s: EngineSettings, up: float) -> bool:
    return est.total_gib - est.weights_gib > (cur.total_gib - cur.weights_gib) * up


def _free_at_start(cur: Estimate, est: Estimate, cur_s: EngineSettings, s: EngineSettings, up: float) -> bool:
    """What utilization leaves to other processes on the card."""
    return est.total_gib * (1 - s.gpu_memory_utilization) > cur.total_gib * (1 - cur_s.gpu_memory_utilization) * up


def _activation_headroom(cur: Estimate, est: Estimate, cur_s: EngineSettings, s: EngineSettings, up: float) -> bool:
    """A smaller activation peak, or more room left above the predicted peak."""
    lower_activation = est.activation_gib < cur.activation_gib / up
    more_headroom = est.total_gib - est.peak_gib > (cur.total_gib - cur.peak_gib) * up + 1e-9
    return lower_activation or more_headroom


def _profile_room(cur: Estimate, est: Estimate, cur_s: EngineSettings, s: EngineSettings, up: float) -> bool:
    """The profiling forward held the weights, its activations and the non-torch memory at once (profile_oom): a
    step must shrink that per-GPU footprint (a smaller --max-num-batched-tokens or --max-num-seqs, TP). The
    utilization only sizes the KV cache after the profile, so it moves none of it."""
    def footprint(e: Estimate) -> float:
        return e.weights_gib + e.activation_gib + e.non_torch_gib
    return footprint(est) < footprint(cur) / up - 1e-9


def _graph_headroom(cur: Estimate, est: Estimate, cur_s: EngineSettings, s: EngineSettings, up: float) -> bool:
    """Graphs are captured into what the budget leaves on the card: no graphs at all (eager), or more room."""
    if est.cudagraph_gib == 0.0 < cur.cudagraph_gib:
        return True
    return est.total_gib - est.peak_gib > (cur.total_gib - cur.peak_gib) * up + 1e-9 and s != cur_s


_RAISES: dict[str, _Raises] = {
    "max_concurrency": _max_concurrency, "kv_cache": _kv_cache, "weights_room": _weights_room,
    "free_at_start": _free_at_start, "activation_headroom": _activation_headroom, "graph_headroom": _graph_headroom,
    "profile_room": _profile_room,
}
