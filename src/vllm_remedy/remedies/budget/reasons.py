"""One line per rung saying why this change, in the operator's terms (what moves, what it buys)."""

from __future__ import annotations

from vllm_remedy.remedies.budget.ladder import Rung
from vllm_remedy.remedies.budget.limits import Limits
from vllm_remedy.vllm.catalog import GpuSpec
from vllm_remedy.vllm.memory import EngineSettings

_NUDGED = ("cudagraph-capture-size", "tensor-parallel-size", "gpu-product")


def _whose(cap: int, cur: EngineSettings, lim: Limits) -> str:
    """The cap named by where it comes from (``planner._base``: the smallest of the model's length, the policy's
    preferred or maximum length and the running value): the policy's when its bound set it below what runs, the model's
    when nothing was typed (or auto was), else the running value, bare."""
    explicit = cur.max_model_len if cur.max_model_len not in (None, -1) else None
    bound = lim.len_preferred or lim.len_max
    if bound == cap and (explicit is None or explicit > cap):
        return f"the policy's {cap:,}"
    return f"the model's {cap:,}" if explicit is None else f"{cap:,}"


def _length(rung: Rung, cap: int, short: str | None, cur: EngineSettings, lim: Limits) -> str:
    got = rung.estimate.max_model_len
    if got >= cap:
        return f"keeps max-model-len {cap:,}"
    # say whose length was cut (the model's, the policy's), not as if it had been asked for
    whose = _whose(cap, cur, lim)
    if short is not None:
        return f"with max-model-len {got:,} (the longest that then fits; {whose} {short})"
    return f"with max-model-len {got:,} (the longest that then fits; {whose} does not)"


def _target(rung: Rung, lim: Limits) -> str:
    return f"max concurrency {rung.estimate.max_concurrency:.2f}x ≥ {lim.required:.2f}x needed"


def explain(rung: Rung, cur: EngineSettings, gpu: GpuSpec, lim: Limits, cap: int, short: str | None = None,
            raised: bool = False) -> str:
    """Why this rung: what moves, what it buys (max-model-len kept or the longest that fits) and the predicted
    concurrency against the target — shown with each step and recorded as the write's reason. ``short``: why the
    cap itself was refused when the estimate margin alone refused it ("fits by 6 %, below the 16 % ...").
    ``raised``: the planner's base raised --max-num-batched-tokens because vLLM refuses the running one
    (config_refused), which the reason says instead of calling it a smaller batch or the policy's bound."""
    s, est = rung.settings, rung.estimate
    extra = ""
    if rung.bounded and not raised:  # the first rung: the planner's base brought this flag inside the policy's bounds
        extra = f" (the policy's bound on --{rung.lever})"
    elif rung.combined:
        extra = " (together with the flag changes above it: no smaller combination fits)"
    elif s.gpu_memory_utilization > cur.gpu_memory_utilization and rung.lever != "gpu-memory-utilization":
        # a smaller profile or weights per GPU fit the start; the budget then sizes the KV cache (ladder (d), nudges)
        extra = (f" (gpu-memory-utilization {cur.gpu_memory_utilization:g}→{s.gpu_memory_utilization:g}: with this "
                 "change the larger budget holds the KV cache the target needs)")
    elif rung.lever in _NUDGED and s.gpu_memory_utilization != cur.gpu_memory_utilization:
        extra = f" (gpu-memory-utilization {s.gpu_memory_utilization:g} keeps the headroom margin)"
    elif s.gpu_memory_utilization < cur.gpu_memory_utilization and rung.lever != "gpu-memory-utilization":
        extra = (f" (gpu-memory-utilization {cur.gpu_memory_utilization:g}→{s.gpu_memory_utilization:g}: the nearest "
                 "budget that fits with it)")
    # The planner's base sets float16 where vLLM refuses the running bfloat16 on this card (planner._base).
    dtype = f"; dtype {s.dtype}: vLLM refuses bfloat16 on this card" if s.dtype != cur.dtype else ""
    if raised:  # the base raised the batch vLLM refused (planner._base): say so on every rung that carries it
        dtype += (f"; max-num-batched-tokens {cur.max_num_batched_tokens}→{s.max_num_batched_tokens}: vLLM without "
                  "chunked prefill refuses a batch below max-model-len at config time (config_refused)")
    if rung.lever == "max-model-len":
        if cur.max_model_len == -1 and est.max_model_len >= cap:
            head = f"set max-model-len explicitly to {cap:,} (auto moves with the memory left)"
        elif cur.max_model_len is None and est.max_model_len >= cap:
            head = f"set max-model-len explicitly to {cap:,} (never the model's default)"
        else:
            head = f"largest max-model-len within bounds that fits: {est.max_model_len:,}"
            if short is not None:
                head += f" ({cap:,} {short})"
        return f"{head}; {_target(rung, lim)}; " + (dtype[2:] if dtype else "nothing else changes")
    if rung.lever == "gpu-memory-utilization":
        head = (f"gpu-memory-utilization {cur.gpu_memory_utilization:g}→{s.gpu_memory_utilization:g} "
                f"(KV {est.kv_cache_gib:.2f} GiB, {est.total_gib - est.peak_gib:.2f} GiB left free)")
    elif rung.lever == "cudagraph-capture-size" and s.max_num_seqs != cur.max_num_seqs:  # V0 (``levers``)
        head = f"max-num-seqs →{s.max_num_seqs}: V0 captures CUDA graphs only up to it, a smaller graph pool " \
               f"({est.cudagraph_gib:.2f} GiB, {est.total_gib - est.peak_gib:.2f} GiB left free); at most " \
               f"{s.max_num_seqs} requests run at once"
    elif rung.lever == "cudagraph-capture-size":
        head = f"largest CUDA-graph batch →{s.cudagraph_capture_size}: a smaller graph pool " \
               f"({est.cudagraph_gib:.2f} GiB, {est.total_gib - est.peak_gib:.2f} GiB left free); larger decode " \
               "batches run without graphs"
    elif rung.lever == "kv-cache-pin":  # planner._step adds which flag goes and that the budget then sizes the cache
        head = f"remove the KV cache pin: the pinned cache falls short of the policy's concurrency, the budget " \
               f"holds {est.kv_cache_tokens:,} tokens (KV {est.kv_cache_gib:.2f} GiB)"
    elif rung.lever == "max-num-seqs":
        head = f"max-num-seqs →{s.max_num_seqs}: a smaller warm-up batch frees memory for KV (activation " \
               f"{est.activation_gib:.2f} GiB)"
    elif rung.lever == "max-num-batched-tokens" and raised and rung.bounded:  # only the base's raise
        return f"{dtype[2:]}; {_length(rung, cap, short, cur, lim)}; {_target(rung, lim)}"
    elif rung.lever == "max-num-batched-tokens":
        head = f"max-num-batched-tokens →{s.max_num_batched_tokens}: smaller prefill batches, smaller activation " \
               f"peak ({est.activation_gib:.2f} GiB)"
    elif rung.lever == "kv-cache-dtype" and not s.kv_cache_dtype.startswith("fp8"):  # ``_base``: auto ran fp8
        head = f"kv-cache-dtype {s.kv_cache_dtype}: a 16-bit KV cache where auto runs the fp8 one the policy " \
               f"forbids (kv_cache_fp8), twice its bytes per token ({est.kv_cache_tokens:,} tokens)"
    elif rung.lever == "kv-cache-dtype":
        head = f"kv-cache-dtype {s.kv_cache_dtype}: half the KV bytes per token ({est.kv_cache_tokens:,} tokens); " \
               "allowed by policy after evaluation"
    elif rung.lever == "tensor-parallel-size":
        head = f"tensor-parallel-size {cur.tp}→{s.tp}: weights {est.weights_gib:.2f} GiB per GPU; the pod needs " \
               f"{s.tp} GPUs on one node"
    elif rung.lever == "gpu-product":
        head = f"move to {rung.gpu.product} ({rung.gpu.total_gib:.2f} GiB vs {gpu.total_gib:.2f}): the smallest " \
               f"{'policy ' if lim.products else ''}product that fits"
    elif rung.lever == "enforce-eager":
        head = "enforce-eager drops the CUDA-graph pool at a throughput and latency cost"
    else:
        head = rung.lever
    return f"{head}; {_length(rung, cap, short, cur, lim)}; {_target(rung, lim)}{extra}{dtype}"
