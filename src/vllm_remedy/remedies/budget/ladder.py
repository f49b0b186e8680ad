"""Build the ladder: one rung per lever, each the smallest use of that lever that is safe, ordered by lever.

For a lever the planner tries, in order: (a) the lever alone, keeping the max-model-len cap; (b) the lever
plus the longest max-model-len that is then safe; (c) the same on top of the earlier flag levers at their
strongest safe values; (d) the same with another utilization. The first that works is the rung. (d) is for a
lever that makes a utilization possible: a smaller profile (--max-num-batched-tokens) fits a profile_oom start
whose KV cache the running utilization is then too small for, while a higher utilization alone never fits the
profile, so ``strongest`` never carries it into (c). Every combination is predicted like any rung.

A rung is kept only when it buys a longer max-model-len than every rung above it — otherwise a smaller
change already does as well.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass

from vllm_remedy.remedies.budget.judge import Judge
from vllm_remedy.remedies.budget.levers import (
    FLAG_LEVERS,
    GRAPH_LEVERS,
    HARDWARE_LEVERS,
    NUDGED_LEVERS,
    PROFILE_LEVERS,
    Context,
    Lever,
    Variant,
    enforce_eager,
    utilization,
)
from vllm_remedy.vllm.catalog import GpuSpec
from vllm_remedy.vllm.failures import FAILURES
from vllm_remedy.vllm.memory import EngineSettings, Estimate


@dataclass(frozen=True)
class Rung:
    """A safe candidate before it becomes a Step: which lever, the full settings, GPU and prediction."""

    lever: str
    settings: EngineSettings
    gpu: GpuSpec
    estimate: Estimate
    label: str | None = None
    combined: bool = False  # needed the earlier flag levers too
    bounded: bool = False  # the change is the policy's bound on the flag it is named by (``planner._step``)


def _best_longest(judge: Judge, variants: list[Variant], cap: int) -> tuple[Variant, EngineSettings, Estimate] | None:
    """The variant allowing the longest safe max-model-len (ties: the smaller change, listed first)."""
    best: tuple[Variant, EngineSettings, Estimate] | None = None
    for v in variants:
        got = judge.longest(v.settings, v.gpu, cap, above=best[2].max_model_len if best is not None else -1)
        if got is not None and (best is None or got[1].max_model_len > best[2].max_model_len):
            best = (v, got[0], got[1])
            if got[1].max_model_len >= cap:
                break
    return best


def _first_working(ctx: Context, judge: Judge, variants: list[Variant], cap: int,
                   beat: int) -> tuple[Variant, EngineSettings, Estimate] | None:
    """The first (smallest) variant that is safe with a max-model-len longer than ``beat``, at its longest;
    a variant that only misses the headroom margin may take the nearest utilization that restores it
    (TP=8 at 0.90 can leave too little room for CUDA graphs and NCCL; at 0.88 it fits).

    Every length ``longest`` returns is at most ``cap``, so when ``beat`` is already the cap no variant can win: that
    search (every GPU product x every utilization, ~940 estimates after a capture OOM's TP rung reached the cap) is
    skipped, with the same answer."""
    if beat >= cap:
        return None
    for v in variants:
        if judge.never_loads(v.settings, v.gpu):  # a card the weights overflow: no utilization or length fits it
            continue
        for s in [v.settings, *(u.settings for u in utilization(ctx, v.settings, v.gpu))]:
            got = judge.longest(s, v.gpu, cap, above=beat)
            if got is not None and got[1].max_model_len > beat:
                return v, got[0], got[1]
    return None


def rung_for(name: str, lever: Lever, ctx: Context, judge: Judge, base: EngineSettings, boosted: EngineSettings,
             cap: int, nudge: bool = False, beat: int = 0) -> Rung | None:
    """The smallest safe use of one lever (see the module docstring for the a/b/c order).

    ``nudge`` levers (hardware, and the CUDA-graph capture size) take the smallest variant (2 GPUs before 4, an
    L40S before a B200, capture 256 before 128), with the nearest utilization that keeps the headroom margin if
    need be, that keeps a longer max-model-len than ``beat`` (the best rung so far); flag levers first try every
    value at full length.
    """
    variants = lever(ctx, base, ctx.gpu)
    if nudge:
        got = _first_working(ctx, judge, variants, cap, beat)
        if got is None and boosted != base:
            got = _first_working(ctx, judge, lever(ctx, boosted, ctx.gpu), cap, beat)
            return Rung(name, got[1], got[0].gpu, got[2], got[0].label, combined=True) if got else None
        return Rung(name, got[1], got[0].gpu, got[2], got[0].label) if got else None
    for v in variants:  # (a) alone, full length
        s = dataclasses.replace(v.settings, max_model_len=cap)
        est = judge.accept(s, v.gpu)
        if est is not None:
            return Rung(name, s, v.gpu, est, v.label)
    found: Rung | None = None
    got = _best_longest(judge, variants, cap)  # (b) with a shorter max-model-len
    if got is not None:
        found = Rung(name, got[1], got[0].gpu, got[2], got[0].label)
    elif boosted != base:  # (c) on top of the earlier flag levers
        got = _best_longest(judge, lever(ctx, boosted, ctx.gpu), cap)
        if got is not None:
            found = Rung(name, got[1], got[0].gpu, got[2], got[0].label, combined=True)
    if not ctx.profile or name not in PROFILE_LEVERS:  # (d) is for a smaller profile; elsewhere it only costs time
        return found
    # (d) with another utilization, nearest first: also when (b)/(c) had to cut the context, since a smaller profile
    # may fit a longer one only with a larger budget (V0, 32,768 tokens at 0.85: 11,776 alone, 16,384 at 0.9)
    for start in dict.fromkeys((base, boosted)):
        if found is not None and found.estimate.max_model_len >= cap:
            break
        variants = lever(ctx, start, ctx.gpu)
        if found is not None:  # only what could beat it: a larger budget, and (unchunked) a batch above its length
            beat = found.estimate.max_model_len
            variants = [v for v in variants if (v.settings.max_num_batched_tokens or cap + 1) > beat
                        or judge.chunked(v.settings, v.gpu)]
        floor = start.gpu_memory_utilization if found is not None else 0.0  # a smaller budget never buys length
        got = _best_longest(judge, [u for v in variants for u in utilization(ctx, v.settings, v.gpu)
                                    if u.settings.gpu_memory_utilization > floor], cap)
        if got is not None and (found is None or got[2].max_model_len > found.estimate.max_model_len):
            return Rung(name, got[1], got[0].gpu, got[2], got[0].label, combined=start != base)
        if found is not None:
            break  # only the running flags' (d) is weighed against a rung already found
    return found


def strongest(lever: Lever, ctx: Context, judge: Judge, settings: EngineSettings) -> EngineSettings:
    """``settings`` with this lever at the value giving the most KV at the shortest allowed length, among the
    values that still fit with headroom (the base for later levers' combinations)."""
    floor = ctx.limits.len_floor

    def score(s: EngineSettings) -> float:
        at_floor = dataclasses.replace(s, max_model_len=min(floor, s.max_model_len or floor))
        est = judge.estimate(at_floor, ctx.gpu)
        if not est.fits or est.total_gib - est.peak_gib < ctx.limits.headroom_for(ctx.gpu, at_floor.version):
            return -1.0
        return est.max_concurrency if judge.addresses_failure(est, at_floor) else -1.0

    best, best_score = settings, score(settings)
    for v in lever(ctx, settings, ctx.gpu):
        if judge.batch_short(v.settings, ctx.gpu):  # unchunked, below the length: a shorter context in disguise,
            continue  # which would refuse every later lever at the running length
        sc = score(v.settings)
        if sc > best_score:
            best, best_score = v.settings, sc
    return best


def build(ctx: Context, judge: Judge, base: EngineSettings, cap: int) -> Iterator[Rung]:
    """Every kept rung in ladder order (enforce-eager only when no other lever works, or, last and temporary,
    when the observed failure is one eager mode answers: an OOM capturing CUDA graphs), computed as consumed: a
    caller that only needs the first rung (is anything to change at all?) pays for no other lever."""
    longest = 0  # the longest max-model-len of the rungs kept so far; a rung must beat it
    first = judge.longest(base, ctx.gpu, cap)
    if first is not None:
        longest = first[1].max_model_len
        yield Rung("max-model-len", first[0], ctx.gpu, first[1])
    found = first is not None
    boosted = base
    for name, lever in (*FLAG_LEVERS, *HARDWARE_LEVERS):
        alternative = ctx.graphs and name in GRAPH_LEVERS
        # a rung is kept only when longer than the longest so far, and none is longer than the cap: once a kept rung
        # reached it, only an alternative (kept at the same length) can still appear, so no other lever is searched
        live = not found or longest < cap or alternative
        rung = rung_for(name, lever, ctx, judge, base, boosted, cap, nudge=name in NUDGED_LEVERS,
                        beat=longest - 1 if alternative else longest) if live else None
        if rung is not None:
            got = rung.estimate.max_model_len
            if not found or got > longest or (alternative and got >= longest):
                yield rung
            found, longest = True, max(longest, rung.estimate.max_model_len)
        if (name, lever) in FLAG_LEVERS:
            boosted = strongest(lever, ctx, judge, boosted)
    if not found:
        rung = rung_for("enforce-eager", enforce_eager, ctx, judge, base, boosted, cap)
        if rung is not None:
            yield rung
            return
    if judge.failure is not None and FAILURES[judge.failure].eager_rung:
        rung = rung_for("enforce-eager", enforce_eager, ctx, judge, base, boosted, cap)
        if rung is not None:
            yield rung
