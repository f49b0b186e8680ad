"""What ``--kv-cache-dtype auto`` becomes for a checkpoint that states a KV-cache quantization.

From 0.14.0 ``EngineArgs.create_engine_config`` builds the cache config with ``resolve_kv_cache_dtype_string(
self.kv_cache_dtype, model_config)`` (engine/arg_utils.py@0.14.0 l.1397-1407, @0.30.0 l.2090): ``auto`` on a
ModelOpt checkpoint whose KV scheme is FP8 becomes ``fp8_e4m3`` (``MODELOPT_TO_VLLM_KV_CACHE_DTYPE_MAP``,
utils/torch_utils.py@0.14.0 l.57-62), so NVIDIA's FP8 / NVFP4 exports run a 1-byte cache unless the pod types a
dtype. From 0.20.0 the map also has ``nvfp4`` (utils/torch_utils.py@0.20.0 l.62-65), a cache this tool does not
size; before 0.20.0 that scheme is "unknown" there and falls back to ``auto``. Before 0.14.0 the function does not
exist (0 hits at 0.13.0) and ``auto`` is the model dtype. A typed dtype is never changed.
"""

from __future__ import annotations

Version = tuple[int, int, int]

RESOLVED_SINCE = (0, 14, 0)
NVFP4_SINCE = (0, 20, 0)


def resolved(kv_cache_dtype: str, scheme: str | None, version: Version) -> tuple[str, str | None]:
    """(the cache dtype vLLM runs, why it cannot be predicted): ``kv_cache_dtype`` as typed, or what ``auto``
    resolves to from the checkpoint's KV scheme (``quant_source.kv_cache_scheme``); an NVFP4 cache is not sized."""
    if kv_cache_dtype != "auto" or scheme is None or version < RESOLVED_SINCE:
        return kv_cache_dtype, None
    if scheme == "fp8":
        return "fp8_e4m3", None
    if scheme == "nvfp4" and version >= NVFP4_SINCE:
        return "nvfp4", ("cannot predict --kv-cache-dtype auto: vLLM resolves it to nvfp4 from the checkpoint's "
                         "KV-cache scheme (resolve_kv_cache_dtype_string, utils/torch_utils.py@0.20.0), a cache this "
                         "tool does not size")
    return kv_cache_dtype, None


def note(kv_cache_dtype: str, scheme: str | None, version: Version) -> str | None:
    """Words for the estimate when ``auto`` was resolved from the checkpoint; None otherwise."""
    if kv_cache_dtype != "auto" or scheme != "fp8" or version < RESOLVED_SINCE:
        return None
    return ("--kv-cache-dtype auto resolves to fp8_e4m3: the checkpoint's ModelOpt KV-cache scheme is FP8 "
            "(resolve_kv_cache_dtype_string, vLLM 0.14.0+)")


def sixteen_bit(run_dtype: str, choices: tuple[str, ...]) -> str | None:
    """The typed ``--kv-cache-dtype`` that keeps a 16-bit cache on such a checkpoint (a typed value is not resolved):
    the model's run dtype where the release's ``choices`` list it (``bfloat16`` from 0.11.0, ``float16`` from 0.19.0
    as read: ``refused.kv_cache_dtypes``); None where none does."""
    return run_dtype if run_dtype in choices else None
