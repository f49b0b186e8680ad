"""How many scheduled batches a sliding-window group keeps blocks for, per request, by release.

vLLM frees a sliding-window layer's out-of-window blocks on the processed-token basis, so a request holds the window
plus every batch scheduled but not yet processed. Through 0.25 ``SlidingWindowSpec.max_memory_usage_bytes`` counts one
batch: ``min(window - 1 + max_num_batched_tokens, max_model_len)`` tokens, plus one block (v1/kv_cache_interface.py
@0.10.0, @0.20.0 via ``max_admission_blocks_per_request``, @0.25.0). From 0.26.0 it counts
``VllmConfig.max_in_flight_tokens`` = ``max_concurrent_batches`` x max_num_batched_tokens (config/vllm.py@0.26.0,
@0.34.0), and that need feeds the max-length check, the auto-fitted length, the "Maximum concurrency" line and the
"GPU KV cache size" line (kv_cache_utils.py / kv_cache_planning.py of the same releases). ``max_concurrent_batches``:
the pipeline size, plus one with async scheduling - on Model Runner V2 (0.26-0.33) or on any runner (0.34); the V1
runner with async scheduling is 2 at one stage and the pipeline size above (0.26.0-0.33.0, "V1 Model Runner does not
fully support async scheduling with PP"). Chunked-local attention (``ChunkedLocalAttentionSpec``) takes the same
in-flight tokens from 0.26.0, but its layers are not sized here (``hf_config.sliding_layers``: cannot predict).

Async scheduling: ``SchedulerConfig.async_scheduling`` defaults to False through 0.13 (config/scheduler.py@0.13.0); from
0.14.0 it defaults to None and ``VllmConfig.__post_init__`` turns it on unless the model is a pooling model,
speculative decoding of a kind it does not support is on, or the executor does not support it (config/vllm.py@0.14.0,
@0.26.0, @0.34.0; the uni and mp executors do, uniproc_executor.py / multiproc_executor.py). Speculative decoding is
not sized at all (``unmodelled``); a pooling model, and a Ray executor (``--distributed-executor-backend ray``), are not
read here and are taken as async - the larger need, so the max-length check errs toward the refusal. Pipeline stages
are not sized (``pipeline``), so ``pp`` matters only to the count itself.
"""

from __future__ import annotations

from collections.abc import Mapping

from vllm_remedy.vllm.memory.flag_values import read_bool

# First release whose sliding-window need counts ``max_in_flight_tokens`` (v1/kv_cache_interface.py@0.26.0).
IN_FLIGHT_SINCE = (0, 26, 0)
# First release that turns async scheduling on when no flag says (config/scheduler.py@0.14.0: default None).
ASYNC_DEFAULT_SINCE = (0, 14, 0)
# From here every runner adds one batch for async scheduling (config/vllm.py@0.34.0 ``max_concurrent_batches``).
ASYNC_ANY_RUNNER_SINCE = (0, 34, 0)


def async_flag(flags: Mapping[str, str]) -> dict[str, bool]:
    """``--async-scheduling`` / ``--no-async-scheduling`` as an ``EngineSettings`` keyword (none when not given)."""
    if "no-async-scheduling" in flags and read_bool(flags, "no-async-scheduling"):
        return {"async_scheduling": False}
    if "async-scheduling" in flags:
        return {"async_scheduling": read_bool(flags, "async-scheduling")}
    return {}


def async_scheduling(version: tuple[int, int, int], flag: bool | None) -> bool:
    """Whether the release schedules asynchronously: the flag when given, else its default (see the module)."""
    return flag if flag is not None else version >= ASYNC_DEFAULT_SINCE


def batches(version: tuple[int, int, int], async_on: bool, pp: int, runner_v2: bool) -> int:
    """Batches whose tokens a sliding-window group holds per request (``max_in_flight_tokens`` / mnbt): 1 before
    0.26.0; then ``VllmConfig.max_concurrent_batches`` of the release."""
    if version < IN_FLIGHT_SINCE or not async_on:
        return 1 if version < IN_FLIGHT_SINCE else pp
    if runner_v2 or version >= ASYNC_ANY_RUNNER_SINCE:
        return pp + 1
    return 2 if pp <= 1 else pp
