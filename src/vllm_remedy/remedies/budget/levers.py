"""The levers the planner may pull, least disruptive first, and the values each may take.

Order (documented in the package docstring): (for a CUDA-graph capture OOM only: the largest captured batch
size), (for a pinned KV cache that starts short of the target: removing the pin), utilization, max-num-seqs,
max-num-batched-tokens, fp8 KV cache, tensor parallelism, a bigger GPU product; enforce-eager only as a last,
temporary resort. Each lever lists its values least change first, within policy bounds and vLLM's own rules.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass

from vllm_remedy.remedies.budget.judge import vary
from vllm_remedy.remedies.budget.limits import Limits
from vllm_remedy.vllm import catalog, gpu_catalog
from vllm_remedy.vllm.catalog import GpuSpec, ModelSpec
from vllm_remedy.vllm.memory import EngineSettings, resolve
from vllm_remedy.vllm.memory.capture import MIN_CAPTURE, capture_flag, largest_capture
from vllm_remedy.vllm.memory.pinned import UNPINNED, pinned
from vllm_remedy.vllm.memory.settings import engine_rules, split_run, tp_split_problem

UTIL_STEP = 0.01
_CONSUMER = ("geforce", "rtx")


@dataclass(frozen=True)
class Variant:
    """One value of one lever applied to some settings (and maybe another GPU)."""

    settings: EngineSettings
    gpu: GpuSpec
    label: str | None = None  # the node-label value to pin (a GPU swap), as the policy spells it


@dataclass(frozen=True)
class Context:
    """What every lever reads: the model, the plan's limits and the GPU the pod runs on now."""

    model: ModelSpec
    limits: Limits
    gpu: GpuSpec  # the GPU the pod runs on now
    graphs: bool = False  # the CUDA graphs ran (or are predicted to run) short: the capture-size lever is live
    pin_short: bool = False  # a flag-sized cache that starts holds too few requests: the unpin lever is live
    profile: bool = False  # the start dies in the memory profile: profile levers may take a utilization (step (d))


def capture_size(ctx: Context, s: EngineSettings, gpu: GpuSpec) -> list[Variant]:
    """Halve the largest batch captured as a CUDA graph (the pool shrinks with it; larger decode batches run
    without graphs), down to the target concurrency or 8: only for a graph failure, on releases with the flag, and not
    where --compilation-config turns the graphs off or sets the sizes itself (the flag would change nothing there, or
    be refused next to it from 0.11.1). On V0 the lever is --max-num-seqs, which bounds the sizes captured
    (``capture.v0_capture_sizes``) and which vLLM's own capture line names."""
    if not ctx.graphs or s.enforce_eager or s.cudagraphs_off or s.compile_off or s.capture_sizes_in_config:
        return []
    res = resolve(ctx.model, gpu, s)
    if res.rules.engine == "V0":
        lim = ctx.limits
        top = min(largest_capture(res), res.max_num_seqs) - 1
        top = min(top, lim.seqs_max) if lim.seqs_max is not None else top
        values = _halvings(top, max(MIN_CAPTURE, lim.seqs_min))
        return [Variant(dataclasses.replace(s, max_num_seqs=v), gpu) for v in values]
    if capture_flag(res.rules) is None:
        return []
    values = _halvings(largest_capture(res) - 1, max(MIN_CAPTURE, math.ceil(ctx.limits.target)))
    return [Variant(dataclasses.replace(s, cudagraph_capture_size=v), gpu) for v in values]


def unpin(ctx: Context, s: EngineSettings, gpu: GpuSpec) -> list[Variant]:
    """The KV cache back to the --gpu-memory-utilization budget: the pinning flag removed. Only for a pin that starts
    but falls short of the concurrency target (``planner._base`` already lifts one that fails; one that starts and
    holds the target is kept): the budget may hold more, and every lever after this one moves the cache again."""
    if not ctx.pin_short or not pinned(s):
        return []
    return [Variant(dataclasses.replace(s, **UNPINNED), gpu)]  # type: ignore[arg-type]


def utilization(ctx: Context, s: EngineSettings, gpu: GpuSpec) -> list[Variant]:
    """Every 0.01 step within the bounds, nearest to the current value first (either direction: lowering
    helps when other processes hold memory or the failure is at run time)."""
    lim = ctx.limits
    lo, hi = round(lim.util_min / UTIL_STEP), round(lim.util_max / UTIL_STEP)
    values = [round(i * UTIL_STEP, 2) for i in range(lo, hi + 1)]
    values = [u for u in values if lim.util_min <= u <= lim.util_max and u != s.gpu_memory_utilization]
    values.sort(key=lambda u: (abs(u - s.gpu_memory_utilization), -u))
    return [Variant(vary(s, gpu_memory_utilization=u), gpu) for u in values]


def max_num_seqs(ctx: Context, s: EngineSettings, gpu: GpuSpec) -> list[Variant]:
    """Powers of two below the running value, down to max(policy min, target concurrency)."""
    lim = ctx.limits
    now = resolve(ctx.model, gpu, s).max_num_seqs
    top = min(now - 1, lim.seqs_max) if lim.seqs_max is not None else now - 1
    values = _halvings(top, lim.seqs_min)
    return [Variant(dataclasses.replace(s, max_num_seqs=v), gpu) for v in values]


def max_num_batched_tokens(ctx: Context, s: EngineSettings, gpu: GpuSpec) -> list[Variant]:
    """Halve the prefill chunk (with chunked prefill) or the whole-prompt batch (without it: down to the shortest
    max-model-len the plan may try, since vLLM refuses max_num_batched_tokens < max_model_len unless chunked prefill
    is on — ``batch_refused``: V0's ``_verify_args``, V1's ``verify_max_model_len`` from 0.11.1; the profile still
    runs over the smaller batch).
    Below the running max-model-len a value only fits with a length it covers: the judge refuses the rest and the
    ladder's length search brings max-model-len down to it, so 16,384/16,384 is found where 32,768 tokens would have
    left a 7,424-token context."""
    lim = ctx.limits
    res = resolve(ctx.model, gpu, s)
    floor = lim.mnbt_min if res.chunked_prefill else max(lim.mnbt_min, min(res.max_model_len, lim.len_floor))
    top = min(res.mnbt - 1, lim.mnbt_max) if lim.mnbt_max is not None else res.mnbt - 1
    values = _halvings(top, floor)
    return [Variant(dataclasses.replace(s, max_num_batched_tokens=v), gpu) for v in values]


def kv_fp8(ctx: Context, s: EngineSettings, gpu: GpuSpec) -> list[Variant]:
    """fp8 KV cache in the policy's spelling, only when the policy allows it (evaluated) and the card has fp8. The
    variant is sized with the engine that runs it: on 0.8-0.10 an fp8 cache where FlashAttention 3 does not run sends
    vLLM to V0 (``vllm.v1_oracle``), whose rules the estimate then applies; with VLLM_USE_V1=1 vLLM refuses the start
    instead (NotImplementedError), so the lever is not offered."""
    if not ctx.limits.fp8_allowed or not gpu.fp8 or s.kv_cache_dtype.startswith("fp8"):
        return []
    fp8 = dataclasses.replace(s, kv_cache_dtype=ctx.limits.fp8_value)
    if engine_rules(fp8, gpu, ctx.model)[1] is not None and engine_rules(s, gpu, ctx.model)[1] is None:
        return []  # the env's VLLM_USE_V1 refuses what the running flags start
    return [Variant(fp8, gpu)]


def tp_sizes(model: ModelSpec, lo: int, hi: int, gpu: GpuSpec | None = None,
             s: EngineSettings | None = None) -> list[int]:
    """TP sizes vLLM accepts for this model (``settings.tp_split_problem``, the rule the estimator refuses by): heads,
    KV heads and intermediate width split evenly, and no AWQ group straddling two GPUs (``quant_config``); with the
    card and the running flags, no GPTQ-style group split that no kernel of that card, dtype and release takes."""
    run = split_run(model, gpu, s) if gpu is not None and s is not None else None
    return [t for t in range(lo, hi + 1) if tp_split_problem(model, t, run) is None]


def tensor_parallel(ctx: Context, s: EngineSettings, gpu: GpuSpec) -> list[Variant]:
    """TP sizes above the running one that vLLM accepts, within policy (its flag bound, and its GPUs per pod when it
    pins a product) and the node's GPU count when known; smallest first, so the ladder takes 2 GPUs before 4."""
    lim = ctx.limits
    sizes = tp_sizes(ctx.model, max(s.tp + 1, lim.tp_min), lim.tp_lever_max, gpu, s)
    return [Variant(dataclasses.replace(s, tp=t), gpu) for t in sizes]


def gpu_products(ctx: Context, s: EngineSettings, gpu: GpuSpec) -> list[Variant]:
    """The policy's products other than this one; without a policy, every bigger catalog product of the same
    class (data-center cards for a data-center card) and no older generation, smallest first."""
    lim = ctx.limits
    if lim.products:
        known = [(label, catalog.find_gpu(label)) for label in lim.products]  # unknown: a ladder note
        pinned = [(lbl, g) for lbl, g in known if g is not None and g.product != gpu.product]
        pinned.sort(key=lambda p: (p[1].total_gib, p[1].product))
        return [Variant(s, g, lbl) for lbl, g in pinned]
    consumer = any(word in gpu.product.lower() for word in _CONSUMER)
    seen: dict[str, GpuSpec] = {}
    for label in gpu_catalog.gpu_labels():
        g = catalog.gpu(label)
        if (g.total_gib > gpu.total_gib + 1.0 and "-MIG-" not in g.product
                and _cc(g) >= _cc(gpu) and consumer == any(w in g.product.lower() for w in _CONSUMER)):
            seen.setdefault(g.product, g)
    cards = list(seen.values())
    cards.sort(key=lambda g: (g.total_gib, g.product))
    return [Variant(s, g, g.product) for g in cards]


def enforce_eager(ctx: Context, s: EngineSettings, gpu: GpuSpec) -> list[Variant]:
    """The last resort (``build`` tries it only when no other lever works); the planner marks it temporary. Not where
    the start already runs eager through --compilation-config (-O0 on V1: no compile, no graphs)."""
    if s.enforce_eager or not ctx.limits.eager_allowed or (s.compile_off and resolve(ctx.model, gpu, s).enforce_eager):
        return []
    return [Variant(dataclasses.replace(s, enforce_eager=True), gpu)]


def _cc(gpu: GpuSpec) -> tuple[int, ...]:
    """The capability to compare GPUs by; an unknown one sorts below every known card."""
    return gpu.capability or ()


def _halvings(top: int, floor: int) -> list[int]:
    """``top`` rounded down to a power of two, halved down to ``floor`` (which is always included)."""
    if top < floor:
        return []
    values, v = [], 1 << (max(top, 1).bit_length() - 1)
    while v > floor:
        values.append(v)
        v //= 2
    values.append(floor)
    return values


Lever = Callable[[Context, EngineSettings, GpuSpec], list[Variant]]
#: Flag levers in the order they are tried after max-model-len; each may combine with the ones before it.
FLAG_LEVERS: tuple[tuple[str, Lever], ...] = (
    ("cudagraph-capture-size", capture_size),
    ("kv-cache-pin", unpin),  # before utilization: no budget lever moves a pinned cache
    ("gpu-memory-utilization", utilization),
    ("max-num-seqs", max_num_seqs),
    ("max-num-batched-tokens", max_num_batched_tokens),
    ("kv-cache-dtype", kv_fp8),
)
#: Levers that shrink the memory profile (the sampler's rows, the forward's batch): only these make a higher
#: utilization possible where it alone never fits (``ladder`` step (d), profile_oom).
PROFILE_LEVERS = ("max-num-seqs", "max-num-batched-tokens")
#: A graph failure's alternatives to one another: each is kept beside the others even at the same max-model-len
#: (a smaller capture size costs large-batch speed, lower utilization costs KV cache: the operator picks).
GRAPH_LEVERS = ("cudagraph-capture-size", "gpu-memory-utilization")
#: Levers that may take the nearest utilization restoring the headroom margin (see ``ladder._first_working``).
NUDGED_LEVERS = ("cudagraph-capture-size", "tensor-parallel-size", "gpu-product")
#: Levers that change the pod's hardware: more GPUs per pod, or another GPU product.
HARDWARE_LEVERS: tuple[tuple[str, Lever], ...] = (
    ("tensor-parallel-size", tensor_parallel),
    ("gpu-product", gpu_products),
)
