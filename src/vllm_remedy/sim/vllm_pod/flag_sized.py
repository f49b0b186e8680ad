"""A simulated start whose KV cache a flag sizes (``--kv-cache-memory-bytes``, ``--num-gpu-blocks-override``).

The rehearsal's pods size such a cache the way vLLM does, in this module's own arithmetic rather than through the
estimator's handling of the flags (``vllm.memory.pinned``): a rehearsal can then catch the tools ignoring a flag.
The profile itself (weights, activations, non-torch memory, graphs) is the simulator's usual physics, the memory
model's terms. vLLM's order (v1/worker/gpu_worker.py ``determine_available_memory``, v1/core/kv_cache_utils.py
``get_kv_cache_configs``, V0 engine/llm_engine.py ``_initialize_kv_caches``): the bytes replace the profiled budget
(from 0.10.2); the override replaces the block count, before the one-request check on V0 and on V1 from 0.21.0,
after it before; the cache is then allocated at that size whatever the card has left, so an oversized one dies in a
CUDA OOM at allocation (``overcommit`` renders it). The cache is exactly the flag's size, so ``reality`` does not
move it.
"""

from __future__ import annotations

from dataclasses import replace

from vllm_remedy.sim.vllm_pod import device
from vllm_remedy.sim.vllm_pod.launch import Launch
from vllm_remedy.vllm.catalog import GIB
from vllm_remedy.vllm.memory import estimate
from vllm_remedy.vllm.memory.kv_layout import check_rule
from vllm_remedy.vllm.memory.terms import kv_layout
from vllm_remedy.vllm.outcomes import Outcome

_KV_DECIDED = (Outcome.FITS, Outcome.MAX_LEN_EXCEEDS_KV, Outcome.NO_CACHE_BLOCKS)
_OVERRIDE_CHECKED_SINCE = (0, 21, 0)  # kv_cache_utils.py@0.21.0: the override feeds the one-request check


def flag_sized(launch: Launch) -> bool:
    """Whether a flag sizes this start's KV cache."""
    s = launch.settings
    return bool(s.kv_cache_memory_bytes) or s.num_gpu_blocks_override is not None


def size(launch: Launch) -> Launch:
    """The launch with the KV cache, outcome and peak vLLM gets from the flags; others unchanged."""
    est = launch.estimate
    if not flag_sized(launch) or est.outcome not in _KV_DECIDED:
        return launch
    s, res, rules = launch.settings, launch.resolved, launch.resolved.rules
    layout = kv_layout(launch.model, res)
    page = layout.block_bytes
    budget = _budget(launch)
    blocks = int(budget // page) if budget > 0 else 0
    override = s.num_gpu_blocks_override
    checked = budget
    if override is not None and (rules.engine == "V0" or rules.version >= _OVERRIDE_CHECKED_SINCE):
        checked, blocks = float(override * page), override
    max_len = est.max_model_len
    need = layout.needed_bytes(max_len, res.mnbt, check_rule(rules.version))
    if rules.engine == "V0":
        outcome = (Outcome.NO_CACHE_BLOCKS if blocks <= 0 else
                   Outcome.MAX_LEN_EXCEEDS_KV if layout.tokens(blocks) < max_len else Outcome.FITS)
    else:
        room = checked - (page if rules.max_len_check_reserves_null_block else 0)
        outcome = (Outcome.NO_CACHE_BLOCKS if checked <= 0 else
                   Outcome.MAX_LEN_EXCEEDS_KV if need > room else Outcome.FITS)
    if override is not None:
        blocks = override
    blocks = max(blocks, 0)
    tokens = layout.tokens(blocks)
    kv = blocks * page / GIB
    graphs = 0.0 if res.enforce_eager else est.cudagraph_gib
    before = res.other_process_gib + device.held_running(launch) + est.weights_gib  # NCCL only with P2P
    peak = before + est.non_torch_gib + est.activation_gib + kv + graphs
    if outcome is not Outcome.FITS:
        peak = min(peak, before + est.activation_gib)
    per_request = layout.blocks_for(max_len, res.mnbt) if rules.engine == "V1" else 0
    concurrency = blocks / per_request if per_request else tokens / max(max_len, 1)
    return replace(launch, estimate=replace(
        est, outcome=outcome, kv_cache_gib=kv, kv_cache_tokens=tokens, gpu_blocks=blocks, max_concurrency=concurrency,
        peak_gib=peak, needed_kv_gib=need / GIB if outcome is Outcome.MAX_LEN_EXCEEDS_KV else None,
        suggested_max_model_len=tokens if outcome is Outcome.MAX_LEN_EXCEEDS_KV and rules.engine == "V0" else None,
        graph_capture_oom=outcome is Outcome.FITS and graphs > 0 and peak - graphs <= est.total_gib < peak))


def _budget(launch: Launch) -> float:
    """The KV bytes before any override: the flag's bytes, or what the profile leaves (the simulator's physics)."""
    s = launch.settings
    if s.kv_cache_memory_bytes:
        return float(s.kv_cache_memory_bytes)
    plain = estimate(launch.model, launch.gpu, replace(s, num_gpu_blocks_override=None))
    return plain.kv_cache_gib * GIB


def log_pins(launch: Launch) -> dict[str, object] | None:
    """What the pod's log says of the flags (``startup_log.pinned_lines``): the bytes reserved, the override and the
    block count it replaces, the free memory at startup; None without a flag."""
    if not flag_sized(launch):
        return None
    s, res = launch.settings, launch.resolved
    budget = _budget(launch)
    page = kv_layout(launch.model, res).block_bytes
    free = launch.gpu.total_gib - device.held_at_snapshot(launch) - res.other_process_gib  # the snapshot's
    return {"kv_cache_memory_bytes": s.kv_cache_memory_bytes, "num_gpu_blocks_override": s.num_gpu_blocks_override,
            "profiled_blocks": int(budget // page) if budget > 0 else 0, "budget_gib": budget / GIB,
            "free_gib": max(0.0, free)}
