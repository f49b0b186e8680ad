"""The lines vLLM logs when a flag sizes the KV cache (``--kv-cache-memory-bytes``, ``--num-gpu-blocks-override``),
and where allocating a cache too large for the card fails, for the rehearsal's renderer; the figures are the
caller's (the simulator sizes such a cache in its own arithmetic).

* ``Worker.determine_available_memory`` (v1/worker/gpu_worker.py@0.10.2 through 0.34.0) returns the bytes after the
  profile run and logs "Initial free memory X GiB, reserved Y GiB memory for KV Cache as specified by
  kv_cache_memory_bytes config and skipped memory profiling. ..." instead of "Available KV cache memory".
* The override is logged as "Overriding num_gpu_blocks=N with num_gpu_blocks_override=M": V1 in ``get_num_blocks``
  (v1/core/kv_cache_utils.py), which before 0.21 runs only after the one-request check passed (so a refused start
  never logs it); V0 in ``LLMEngine._initialize_kv_caches`` (engine/llm_engine.py), before its checks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from vllm_remedy.vllm.outcomes import Failure

_OVERRIDE_CHECKED_SINCE = (0, 21, 0)


class _Log(Protocol):
    v: tuple[int, int, int]
    engine: str

    def each_rank(self, message: str, **kw: Any) -> None: ...
    def log(self, role: str, message: str, **kw: Any) -> None: ...


def reserved(w: _Log, pins: Mapping[str, Any]) -> bool:
    """The bytes' "reserved" line on V1 (every rank) in place of the budget line; False when it does not apply."""
    size = pins.get("kv_cache_memory_bytes")
    if not size or w.engine != "v1":
        return False
    w.each_rank(f"Initial free memory {float(pins.get('free_gib', 0.0)):.2f} GiB, reserved {size / 2**30:.2f} GiB "
                "memory for KV Cache as specified by kv_cache_memory_bytes config and skipped memory profiling. This "
                "does not respect the gpu_memory_utilization config. Only use kv_cache_memory_bytes config when you "
                "want manual control of KV cache memory size. If OOM'ed, check the difference of initial free memory "
                "between the current run and the previous run where kv_cache_memory_bytes is suggested and update "
                "it correspondingly.", source="gpu_worker.py")
    return True


def override(w: _Log, pins: Mapping[str, Any], failure: Failure) -> None:
    """The override's line, where the release logs it before ``failure`` (if any) ends the start."""
    count = pins.get("num_gpu_blocks_override")
    if count is None:
        return
    checked_first = w.engine == "v1" and w.v < _OVERRIDE_CHECKED_SINCE
    if checked_first and failure in (Failure.NO_CACHE_BLOCKS, Failure.MAX_LEN_EXCEEDS_KV):
        return
    w.log("engine", f"Overriding num_gpu_blocks={int(pins.get('profiled_blocks', 0))} with "
                    f"num_gpu_blocks_override={count}",
          source="kv_cache_utils.py" if w.engine == "v1" else "llm_engine.py")


def allocation_frames(engine: str) -> list[tuple[str, str]]:
    """Where allocating the KV cache raises a CUDA OOM: V1 ``initialize_kv_cache`` -> ``initialize_kv_cache_tensors``
    -> ``_allocate_kv_cache_tensors``' torch.zeros (v1/worker/gpu_model_runner.py@0.11.0), V0
    ``CacheEngine._allocate_kv_cache`` (worker/cache_engine.py)."""
    if engine == "v0":
        return [("worker/worker.py", "initialize_cache"), ("worker/cache_engine.py", "__init__"),
                ("worker/cache_engine.py", "_allocate_kv_cache")]
    return [("v1/worker/gpu_worker.py", "initialize_from_config"),
            ("v1/worker/gpu_model_runner.py", "initialize_kv_cache"),
            ("v1/worker/gpu_model_runner.py", "initialize_kv_cache_tensors"),
            ("v1/worker/gpu_model_runner.py", "_allocate_kv_cache_tensors")]
