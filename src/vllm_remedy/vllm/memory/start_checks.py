"""The checks vLLM runs on a sized budget, in its order, and what the cache then holds for one request.

Moved out of ``core`` (which sizes the budget): the first failed check (``outcome``), the longest length one request
can have (``longest``) and "maximum concurrency" (``concurrency``), each as the release computes it.
"""

from __future__ import annotations

from vllm_remedy.vllm.catalog import GIB
from vllm_remedy.vllm.memory.kv_layout import KvLayout, check_rule
from vllm_remedy.vllm.memory.resolved import Resolved
from vllm_remedy.vllm.outcomes import Outcome


def longest(layout: KvLayout, res: Resolved, kv: float, tokens: int, cap: int) -> int:
    """The longest max-model-len one request can have: the cache's tokens for one full-attention group, vLLM's
    search over the need its max-length check computes otherwise (``kv_layout.check_rule``: a sliding-window group
    needs only its window, and 0.14-0.18 count only the first group)."""
    if layout.windows == (None,):
        return max(0, tokens - layout.block_size) if res.rules.max_len_check_reserves_null_block else tokens
    return layout.longest(_check_bytes(res, layout, kv), res.mnbt, cap, check_rule(res.rules.version))


def _check_bytes(res: Resolved, layout: KvLayout, kv: float) -> float:
    """The bytes the one-request check and the max-length search compare with: the KV budget, from 0.29.0 less the
    null block the BlockPool holds back (``check_enough_kv_cache_memory`` and ``get_kv_cache_configs``,
    v1/core/kv_cache_utils.py@0.29.0: "Reserve the null block BlockPool permanently holds back"; the block is the
    largest group's pages, ``_get_kv_cache_bytes_per_block``, i.e. ``layout.block_bytes``)."""
    return kv * GIB - (layout.block_bytes if res.rules.max_len_check_reserves_null_block else 0)


def outcome(res: Resolved, total: float, requested: float, weights: float, context: float, other: float,
             kv: float, blocks: int, tokens: int, max_len: int, layout: KvLayout, *,
             profiled: float = 0.0, snapshot_context: float | None = None) -> Outcome:
    """The first check vLLM fails, in the order it runs them (graph capture, which comes last, is the caller's).

    ``profiled``: what the memory-profiling forward adds to the loaded weights (its activation peak and the non-torch
    memory). The profile runs after the weights load and before any KV check (V1 determine_available_memory ->
    profile_run, v1/worker/gpu_worker.py@0.19.0, also with --kv-cache-memory-bytes; Model Runner V2's profile_run,
    v1/worker/gpu/model_runner.py@0.28.0; V0 determine_num_available_blocks -> profile_run,
    worker/worker.py@0.6.6), whatever the utilization: when it does not fit the card, the start dies there.
    ``snapshot_context``: what the free-memory check's snapshot sees of this process (before 0.11 V1 snapshots before
    NCCL, ``non_torch.nccl_outside_budget``); ``context`` when not given."""
    r = res.rules
    seen = context if snapshot_context is None else snapshot_context
    if r.free_memory_check and total - seen - other < requested:
        return Outcome.FREE_MEMORY_BELOW_UTILIZATION
    if other + context + weights > total:
        return Outcome.OOM_LOADING_WEIGHTS
    if other + context + weights + profiled > total:
        return Outcome.PROFILE_OOM
    if kv <= 0 or blocks == 0:
        return Outcome.NO_CACHE_BLOCKS
    # V0 compares token counts; V1 compares the bytes one max-length request needs, as the version counts them
    # (``kv_layout.check_rule``), with the budget.
    if r.engine == "V0":
        exceeds = tokens < max_len
    else:
        exceeds = layout.needed_bytes(max_len, res.mnbt, check_rule(r.version)) > _check_bytes(res, layout, kv)
    return Outcome.MAX_LEN_EXCEEDS_KV if exceeds else Outcome.FITS


def concurrency(res: Resolved, layout: KvLayout, blocks: int, tokens: int, max_len: int) -> float:
    """"Maximum concurrency for N tokens per request" as the version computes it."""
    if max_len <= 0:
        return 0.0
    if res.rules.engine == "V1" and res.rules.version >= (0, 9, 0):
        return blocks / layout.blocks_for(max_len, res.mnbt)
    return tokens / max_len
