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

from collections.abc import Mapping
from typing import Any

from vllm_remedy.vllm.quant_config import section

Version = tuple[int, int, int]

RESOLVED_SINCE = (0, 14, 0)
NVFP4_SINCE = (0, 20, 0)


def resolved(kv_cache_dtype: str, scheme: str | None, version: Version) -> str:
    """The cache dtype vLLM runs: ``kv_cache_dtype`` as typed, or what ``auto`` resolves to from the checkpoint's
    KV scheme (``quant_config.kv_cache_scheme``); "cannot predict" for an NVFP4 cache."""
    if kv_cache_dtype != "auto" or scheme is None or version < RESOLVED_SINCE:
        return kv_cache_dtype
    if scheme == "fp8":
        return "fp8_e4m3"
    if scheme == "nvfp4" and version >= NVFP4_SINCE:
        from vllm_remedy.vllm.memory.unmodelled import CannotPredict  # the memory package imports the catalog

        raise CannotPredict("cannot predict --kv-cache-dtype auto: vLLM resolves it to nvfp4 from the checkpoint's "
                            "KV-cache scheme (resolve_kv_cache_dtype_string, utils/torch_utils.py@0.20.0), a cache "
                            "this tool does not size")
    return kv_cache_dtype


def note(kv_cache_dtype: str, scheme: str | None, version: Version) -> str | None:
    """Words for the estimate when ``auto`` was resolved from the checkpoint; None otherwise."""
    if kv_cache_dtype != "auto" or scheme != "fp8" or version < RESOLVED_SINCE:
        return None
    return ("--kv-cache-dtype auto resolves to fp8_e4m3: the checkpoint's ModelOpt KV-cache scheme is FP8 "
            "(resolve_kv_cache_dtype_string, vLLM 0.14.0+)")


def sixteen_bit(run_dtype: str, version: Version) -> str | None:
    """The typed ``--kv-cache-dtype`` that keeps a 16-bit cache on such a checkpoint (a typed value is not resolved):
    the model's run dtype where the release's choices list it (``bfloat16`` from 0.11.0, ``float16`` from 0.19.0 as
    read: ``refused.KV_CACHE_DTYPES``); None where none does."""
    from vllm_remedy.vllm.cmdline.refused import kv_cache_dtypes  # the flag's choices; imported late (cmdline tree)

    return run_dtype if run_dtype in kv_cache_dtypes(version) else None


def kv_cache_scheme(config: Mapping[str, Any]) -> str | None:
    """The KV-cache quantization a ModelOpt checkpoint states, as ``get_kv_cache_quant_algo_string`` reads it
    (utils/torch_utils.py@0.14.0 l.239-289, @0.30.0): for a method starting with "modelopt" (the stated
    ``quant_method``, or the one ``_normalize_quantization_config`` writes for a ``producer.name`` of "modelopt",
    transformers_utils/model_arch_config_convertor.py@0.14.0 l.145-160), the first of ``kv_cache_scheme`` and
    ``kv_cache_quant_algo`` under ``quantization`` (else the section itself), then the section's own. "fp8" for the
    text "FP8" or a static 8-bit float scheme (``dynamic`` false, ``num_bits`` 8, ``type`` "float"); "nvfp4" for the
    text "NVFP4" or a 4-bit float scheme (mapped from 0.20.0 only: ``resolved``); None for no scheme or another
    method (any other value resolves to auto in every release)."""
    qc = section(config)
    if qc is None:
        return None
    method = str(qc.get("quant_method") or "").lower()
    producer = qc.get("producer")
    if not method and isinstance(producer, Mapping) and producer.get("name") == "modelopt":
        method = "modelopt"
    if not method.startswith("modelopt"):
        return None
    inner = qc.get("quantization", qc)
    inner = inner if isinstance(inner, Mapping) else {}
    algo = (inner.get("kv_cache_scheme") or qc.get("kv_cache_scheme") or inner.get("kv_cache_quant_algo")
            or qc.get("kv_cache_quant_algo"))
    if isinstance(algo, Mapping):
        if algo.get("type") != "float":
            return None
        if algo.get("dynamic") is False and algo.get("num_bits") == 8:
            return "fp8"
        return "nvfp4" if algo.get("num_bits") == 4 else None
    if isinstance(algo, str) and algo.lower() in ("fp8", "nvfp4"):
        return algo.lower()
    return None
