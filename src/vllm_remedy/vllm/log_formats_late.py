"""Startup-log formats of vLLM 0.22-0.34 that ``log_formats.TEMPLATES`` includes: the KV errors' advice, the
post-start advisory, 0.34's extensible KV cache and auto-fit (cited as ``file@version`` of the PyPI sdists)."""

from __future__ import annotations

from vllm_remedy.vllm.log_template import Template, v

# 0.22.0 added a CPU-backend note to both KV errors' advice (v1/core/kv_cache_utils.py@0.22.0, through 0.33.0 in
# v1/core/kv_cache_planning.py@0.33.0); 0.34.0 replaced it by a hint that depends on the extensible KV cache and the
# utilization (``kv_hint``, v1/core/kv_cache_planning.py@0.34.0 ``_more_kv_cache_memory_hint``).
CPU_NOTE_UTIL = ("Try increasing `gpu_memory_utilization` when initializing the engine (this flag also controls CPU "
                  "memory reservation on the CPU backend, despite its name).")
CPU_NOTE_BOTH = ("Try increasing `gpu_memory_utilization` (which also controls CPU memory on the CPU backend) or "
                  "decreasing `max_model_len` when initializing the engine.")
ADVISORY_HEAD = ("Free memory on device ({free_gib:r2}/{total_gpu_gib:r2} GiB) on startup. Desired GPU memory "
                  "utilization is ({gpu_memory_utilization:g}, {requested_gib:r2} GiB). Actual usage is ")
USAGE_4 = ("{profile_weights_gib:r2} GiB for weight, {activation_gib:r2} GiB for peak activation, {non_torch_gib:r2} "
            "GiB for non-torch memory, and {cudagraph_gib:r2} GiB for CUDAGraph memory.")
USAGE_3 = ("{consumed_gib:r2} GiB for consumed memory (weights + non-torch), {peak_activation_gib:r2} GiB for peak "
            "activation, and {cudagraph_gib:r2} GiB for CUDAGraph memory.")
ADVISORY_TAIL = (" Replace gpu_memory_utilization config with `--kv-cache-memory={fit_bytes:d}` ({fit_gib:r2} GiB) "
                  "to fit into requested memory, or `--kv-cache-memory={full_bytes:d}` ({full_gib:r2} GiB) to fully "
                  "utilize gpu memory. Current kv cache memory in use is {kv_in_use_gib:r2} GiB.")
_FIT = "Auto-fit max_model_len: "
_AFTER = "after CUDA graph capture and warmup"
# 0.34.0's extensible KV cache (v1/worker/extensible_kv_cache.py@0.34.0): "Available KV cache memory" is the reserved
# capacity; the size is measured after warmup and capture, then committed. The engine logs the capacity line
# between the two (finalize_extensible_kv_cache, v1/core/kv_cache_planning.py@0.34.0, before extend_kv_cache).
# Auto-fit (--max-model-len -1/auto, v1/core/kv_cache_utils.py@0.19.0-@0.32.0, kv_cache_planning.py@0.33.0-): the
# "GPU memory" wording through 0.31, the KV cache memory and its device from 0.32.0, the after-warmup refit @0.34.0.
LATE_KV: tuple[Template, ...] = (
    Template("warmup_memory", "Memory after warmup: {after_warmup_free_gib:r2} GiB free, {committed_gib:r2} GiB "
             "committed to the KV cache, {transient_gib:r2} GiB kept for transient activations "
             "({transient_peak_gib:r2} GiB allocated at peak, {torch_growth_gib:r2} GiB of torch reservation "
             "growth); {final_blocks:d} KV cache blocks ({final_kv_gib:r2} GiB) fit within the requested "
             "{final_requested_gib:r2} GiB. Torch may reserve up to {torch_limit_gib:r2} GiB.", since=v("0.34.0"),
             engine="v1", source="extensible_kv_cache.py"),
    Template("kv_extended", "Extended KV cache to {gpu_blocks:d} blocks ({extended_kv_gib:.2f} GiB).",
             since=v("0.34.0"), engine="v1", source="extensible_kv_cache.py"),
    Template("auto_fit", _FIT + "reduced from {auto_fit_from:d} to {auto_fit_max_model_len:d} to fit in available GPU "
             "memory ({auto_fit_kv_gib:r2} GiB available for KV cache)", since=v("0.19.0"), until=v("0.32.0"),
             engine="v1", source="kv_cache_utils.py"),
    Template("auto_fit", _FIT + "full model context length {auto_fit_max_model_len:d} fits in available GPU memory",
             since=v("0.19.0"), until=v("0.32.0"), engine="v1", source="kv_cache_utils.py"),
    *(Template("auto_fit", _FIT + text, since=since, until=until, engine="v1", source="kv_cache_utils.py", tail=tail)
      for text in ("reduced from {auto_fit_from:d} to {auto_fit_max_model_len:d} to fit in available KV cache memory "
                   "({auto_fit_kv_gib:r2} GiB {kv_device:s})", "full model context length {auto_fit_max_model_len:d} "
                   "fits in available KV cache memory ({auto_fit_kv_gib:r2} GiB {kv_device:s})")
      for since, until, tail in ((v("0.32.0"), v("0.34.0"), ""), (v("0.34.0"), None, "; the final length is set "
                                 "after CUDA graph capture and warmup"))),
    Template("auto_fit_final", _FIT + "using max_model_len={auto_fit_max_model_len:d}, which fits in the KV cache "
             "memory left " + _AFTER + " ({auto_fit_kv_gib:r2} GiB {kv_device:s}).", since=v("0.34.0"), engine="v1",
             source="kv_cache_planning.py"),
    Template("auto_fit_final", "--max-model-len auto reduced max_model_len from {auto_fit_from:d} to "
             "{auto_fit_max_model_len:d} ({auto_fit_kv_gib:r2} GiB {kv_device:s} left for the KV cache " + _AFTER +
             ").", since=v("0.34.0"), engine="v1", source="kv_cache_planning.py", render=False),
    Template("auto_fit_final", "--max-model-len auto reduced max_model_len from {auto_fit_from:d} to "
             "{auto_fit_max_model_len:d} ({auto_fit_kv_gib:r2} GiB {kv_device:s} available for the KV cache).",
             since=v("0.34.0"), engine="v1", source="kv_cache_planning.py", render=False),
)
