"""The one vocabulary for how a vLLM start ends, shared by the log classifier and the memory model.

The estimator predicts a subset (``STARTUP_OUTCOMES``); the classifier can also see what only
happens at run time (``oom_under_load``) or outside vLLM (``host_oom_killed``).
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Protocol


class Failure(str, Enum):
    """How the log classifier names the end of a start or run: wider than ``Outcome`` (run-time and host
    OOM too); a str enum, so it prints and serialises as its value. What each class means (headline, runbook
    step, hint, phase) is in ``vllm.failures``."""

    NONE = "none"
    OOM_LOADING_WEIGHTS = "oom_loading_weights"
    NO_CACHE_BLOCKS = "no_cache_blocks"
    MAX_LEN_EXCEEDS_KV = "max_len_exceeds_kv"
    MAX_LEN_EXCEEDS_MODEL = "max_len_exceeds_model"
    FREE_MEMORY_BELOW_UTILIZATION = "free_memory_below_utilization"
    # a raw CUDA OOM in the memory-profiling forward (profile_run / _dummy_run), before the KV cache is sized
    PROFILE_OOM = "profile_oom"
    SAMPLER_WARMUP_OOM = "sampler_warmup_oom"
    CUDAGRAPH_CAPTURE_OOM = "cudagraph_capture_oom"
    KV_CACHE_ALLOCATION_OOM = "kv_cache_allocation_oom"  # a CUDA OOM allocating the KV cache (initialize_kv_cache)
    OOM_UNDER_LOAD = "oom_under_load"
    HOST_OOM_KILLED = "host_oom_killed"
    WORLD_SIZE_EXCEEDS_GPUS = "world_size_exceeds_gpus"
    DTYPE_UNSUPPORTED = "dtype_unsupported"
    ARGUMENT_REFUSED = "argument_refused"  # vLLM's argparse refused a flag's value: exit 2, nothing started
    # vLLM's own configuration checks refused the settings (a ValueError/AssertionError while the engine config is
    # built, or an environment variable it cannot read): nothing was loaded
    CONFIG_REFUSED = "config_refused"
    # vLLM could not read the model's config.json: no such repository, revision or local directory, or the Hub
    # refused access (gated, a missing or bad token); nothing was loaded (``startup_log.model_errors``)
    MODEL_UNAVAILABLE = "model_unavailable"
    UNKNOWN = "unknown"

    def __str__(self) -> str:
        return self.value


class Outcome(str, Enum):
    """What the memory model predicts for a start: ``fits`` or the failure vLLM would log."""

    FITS = "fits"
    OOM_LOADING_WEIGHTS = Failure.OOM_LOADING_WEIGHTS.value
    NO_CACHE_BLOCKS = Failure.NO_CACHE_BLOCKS.value
    MAX_LEN_EXCEEDS_KV = Failure.MAX_LEN_EXCEEDS_KV.value
    # vLLM's model config refuses a --max-model-len above the model's own maximum before any memory is touched
    # (unless VLLM_ALLOW_LONG_MAX_MODEL_LEN is set): a config error, not a budget one (``vllm.model_len``).
    MAX_LEN_EXCEEDS_MODEL = Failure.MAX_LEN_EXCEEDS_MODEL.value
    FREE_MEMORY_BELOW_UTILIZATION = Failure.FREE_MEMORY_BELOW_UTILIZATION.value
    # The weights load, then the profiling forward over --max-num-batched-tokens (its activations, with the non-torch
    # memory, the CUDA context and other processes) does not fit the card: a raw CUDA OOM before any KV check.
    PROFILE_OOM = Failure.PROFILE_OOM.value
    # vLLM's worker refuses a bfloat16 model dtype on a GPU below compute capability 8.0 before loading anything
    # (``vllm.dtype_support``): a config error, not a budget one.
    DTYPE_UNSUPPORTED = Failure.DTYPE_UNSUPPORTED.value
    # V0 without chunked prefill refuses --max-num-batched-tokens below max-model-len while it builds the scheduler
    # config (``SchedulerConfig._verify_args``, config.py@0.6.3 and @0.8.5): a config error, not a budget one.
    CONFIG_REFUSED = Failure.CONFIG_REFUSED.value

    def __str__(self) -> str:
        return self.value

    @property
    def failure(self) -> Failure:
        """The classifier's name for this outcome (``fits`` ↔ ``none``)."""
        return Failure.NONE if self is Outcome.FITS else Failure(self.value)


#: Starts vLLM refuses at config time, before the engine sizes anything (``vllm.model_len``, ``vllm.dtype_support``):
#: the memory model still computes a KV cache for them, but no vLLM run ever reaches it, so no view shows one.
REFUSED_BEFORE_SIZING = frozenset({Outcome.MAX_LEN_EXCEEDS_MODEL, Outcome.DTYPE_UNSUPPORTED, Outcome.CONFIG_REFUSED})
#: The figures only a sized engine has: null in JSON (the keys stay, for a stable shape), "not sized" in text.
SIZING_KEYS = ("kv_cache_gib", "kv_cache_tokens", "gpu_blocks", "max_concurrency")
NOT_SIZED = "not sized: vLLM refuses the start at config time, before the KV cache"
#: Starts that end before a KV cache exists, though the engine ran: the free-memory check (init_device), weights that
#: do not load, a profiling forward that runs the card out of memory (profile_oom), and "No available memory for the
#: cache blocks" (before the cache is allocated; on V1 before 0.21 a
#: --num-gpu-blocks-override does not bypass it: get_kv_cache_config, v1/core/kv_cache_utils.py@0.11.0, checks the
#: profiled bytes first). The model's figures for them (a negative budget, the override's blocks) are no cache.
NO_CACHE_BEFORE_ALLOCATION = frozenset({Outcome.FREE_MEMORY_BELOW_UTILIZATION, Outcome.OOM_LOADING_WEIGHTS,
                                        Outcome.PROFILE_OOM, Outcome.NO_CACHE_BLOCKS})
NO_CACHE = "no KV cache: vLLM stops the start before it allocates one"


class _Judged(Protocol):
    """What :func:`sized_json` reads of ``memory.Estimate`` (a protocol: the memory model imports this module)."""

    @property
    def outcome(self) -> Outcome: ...

    def to_json(self) -> dict[str, Any]: ...


def sized(outcome: Outcome) -> bool:
    """Whether a start with this outcome gets as far as sizing its KV cache."""
    return outcome not in REFUSED_BEFORE_SIZING


def has_cache(outcome: Outcome) -> bool:
    """Whether a start with this outcome allocates a KV cache, so has KV and concurrency figures to show."""
    return sized(outcome) and outcome not in NO_CACHE_BEFORE_ALLOCATION


def no_cache(outcome: Outcome) -> str:
    """What the views print instead of KV figures for a start without a cache (``has_cache`` false)."""
    return NOT_SIZED if not sized(outcome) else NO_CACHE


def sized_json(est: _Judged) -> dict[str, Any]:
    """``Estimate.to_json`` with the sizing figures null when vLLM stops the start before a KV cache exists: every
    JSON view (estimate, check, drift, plan) shows such a start the same way."""
    data = est.to_json()
    if not has_cache(est.outcome):
        data.update(dict.fromkeys(SIZING_KEYS))
    return data
