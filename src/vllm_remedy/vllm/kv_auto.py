"""What ``--kv-cache-dtype auto`` becomes for a checkpoint that states a KV-cache quantization.

From 0.14.0 ``EngineArgs.create_engine_config`` builds the cache config with ``resolve_kv_cache_dtype_string(
self.kv_cache_dtype, model_config)`` (engine/arg_utils.py@0.14.0 l.1397-1407, @0.30.0 l.2090): ``auto`` on a
ModelOpt checkpoint whose KV scheme is FP8 becomes ``fp8_e4m3`` (``MODELOPT_TO_VLLM_KV_CACHE_DTYPE_MAP``,
utils/torch_utils.py@0.14.0 l.57-62), so NVIDIA's FP8 / NVFP4 exports run a 1-byte cache unless the pod types a
dtype. From 0.20.0 the map also has ``nvfp4`` (utils/torch_utils.py@0.20.0 l.62-65), a cache this tool does not
size; before 0.20.0 that scheme is "unknown" there and falls back to ``auto``. Before 0.14.0 the function does not
exist (0 hits at 0.13.0) and ``auto`` is the model dtype. A typed dtype is never changed.

A compressed-tensors (llm-compressor) checkpoint states its KV scheme as ``kv_cache_scheme``, which
``CompressedTensorsConfig`` keeps (compressed_tensors.py@0.15.0 l.244, @0.30.0 l.263) and no engine argument reads
(``get_kv_cache_quant_algo_string`` takes modelopt only, utils/torch_utils.py@0.22.0 l.311-357). ``Attention.__init__``
reads it at layer construction and sets the layer's and ``cache_config.cache_dtype`` to "fp8"
(``kv_cache_dtype_str_to_dtype``: the platform's fp8, e4m3 on CUDA): from 0.15.0 whatever was typed
(attention/layer.py@0.15.0 l.198-203; model_executor/layers/attention/attention.py@0.16.0 l.232, @0.21.0 l.231-238),
from 0.22.0 only for ``auto`` (attention.py@0.22.0 l.231-243, @0.30.0 l.284-289, @0.34.0 l.308-313); absent through
0.14.0. The page size follows: ``get_kv_cache_spec`` builds the spec from that layer's ``kv_cache_torch_dtype``
(attention.py@0.30.0 l.643-668; FP8_PER_TENSOR, ``get_kv_quant_mode``), and ``update_block_size_for_backend`` runs
after the model is built (v1/executor/uniproc_executor.py@0.29.0 l.75), on the backend chosen for fp8. The MLA
layer does not read it (``MLAAttention``, attention/layer.py@0.15.0, mla_attention.py@0.16.0 to @0.34.0), so an MLA
config is left as it is (VLLM_MLA_DISABLE, which would route it through ``Attention``, is not read here). A scheme
other than a symmetric 8-bit float per tensor or per head is ``validate_kv_cache_scheme``'s to accept or refuse at
load (compressed_tensors.py@0.15.0 l.961-997, @0.30.0 l.1052-1091, whose tests differ): "cannot predict".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Version = tuple[int, int, int]

RESOLVED_SINCE = (0, 14, 0)
NVFP4_SINCE = (0, 20, 0)
CT_SINCE = (0, 15, 0)  # Attention.__init__ honours a compressed-tensors kv_cache_scheme (attention/layer.py@0.15.0)
CT_AUTO_ONLY_SINCE = (0, 22, 0)  # ... only when the dtype is auto (attention.py@0.22.0); any typed one before
CT_FP8 = "ct_fp8"  # ``ModelSpec.kv_quant`` for a compressed-tensors fp8 KV scheme
CT_OTHER = "ct_other"  # ... for another compressed-tensors KV scheme (validate_kv_cache_scheme's, not modelled)


def ct_scheme(text: Mapping[str, Any], mla: bool) -> str | None:
    """``CT_FP8`` / ``CT_OTHER`` for a compressed-tensors section (``quantization_config`` of the folded text config,
    as the method is read) with a non-null ``kv_cache_scheme``; None otherwise, and for a model whose latent is cached
    (``mla``: ``hf_config.mla_dims``; MiniCPM3's per-head K/V runs ``Attention`` and is not one)."""
    qc = text.get("quantization_config")
    if not isinstance(qc, Mapping) or str(qc.get("quant_method") or "").lower() != "compressed-tensors":
        return None
    scheme = qc.get("kv_cache_scheme")
    if scheme is None or mla:  # MLAAttention does not read it
        return None
    fp8 = (isinstance(scheme, Mapping) and scheme.get("type") == "float" and scheme.get("num_bits") == 8
           and scheme.get("strategy") in ("tensor", "attn_head") and scheme.get("symmetric") is True)
    return CT_FP8 if fp8 else CT_OTHER


def _ct(kv_cache_dtype: str, scheme: str, version: Version) -> tuple[str, str | None]:
    """``resolved`` for a compressed-tensors KV scheme (module docstring)."""
    if version < CT_SINCE or (kv_cache_dtype != "auto" and version >= CT_AUTO_ONLY_SINCE):
        return kv_cache_dtype, None
    if scheme == CT_OTHER:
        return kv_cache_dtype, ("cannot predict the KV cache: the checkpoint's compressed-tensors kv_cache_scheme is "
                                "not a symmetric 8-bit float one per tensor or per head, which vLLM's "
                                "validate_kv_cache_scheme accepts or refuses per release (compressed_tensors.py), "
                                "not modelled")
    return "fp8", None


def resolved(kv_cache_dtype: str, scheme: str | None, version: Version) -> tuple[str, str | None]:
    """(the cache dtype vLLM runs, why it cannot be predicted): ``kv_cache_dtype`` as typed, or what ``auto``
    resolves to from the checkpoint's KV scheme (``quant_source.kv_cache_scheme``); an NVFP4 cache is not sized."""
    if scheme in (CT_FP8, CT_OTHER):
        return _ct(kv_cache_dtype, scheme, version)
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
    """Words for the estimate when ``auto`` was resolved from the checkpoint (or, for a compressed-tensors KV scheme
    on 0.15-0.21, a typed dtype replaced); None otherwise."""
    if scheme in (CT_FP8, CT_OTHER):
        run = _ct(kv_cache_dtype, scheme, version)[0]
        if run == kv_cache_dtype:
            return None
        if version >= CT_AUTO_ONLY_SINCE:
            return ("--kv-cache-dtype auto resolves to fp8 (fp8_e4m3): the checkpoint's compressed-tensors "
                    "kv_cache_scheme is honoured when the dtype is auto (Attention, vLLM 0.22.0+)")
        said = "auto resolves to" if kv_cache_dtype == "auto" else f"{kv_cache_dtype} is replaced by"
        return (f"--kv-cache-dtype {said} fp8 (fp8_e4m3): the checkpoint's compressed-tensors "
                "kv_cache_scheme sets every attention layer's cache dtype, whatever was typed (Attention, vLLM "
                "0.15.0-0.21.x)")
    if kv_cache_dtype != "auto" or scheme != "fp8" or version < RESOLVED_SINCE:
        return None
    return ("--kv-cache-dtype auto resolves to fp8_e4m3: the checkpoint's ModelOpt KV-cache scheme is FP8 "
            "(resolve_kv_cache_dtype_string, vLLM 0.14.0+)")


def sixteen_bit(run_dtype: str, choices: tuple[str, ...], scheme: str | None = None,
               version: Version | None = None) -> str | None:
    """The typed ``--kv-cache-dtype`` that keeps a 16-bit cache on such a checkpoint (a typed value is not resolved):
    the model's run dtype where the release's ``choices`` list it (``bfloat16`` from 0.11.0, ``float16`` from 0.19.0
    as read: ``refused.kv_cache_dtypes``); None where none does, and for a compressed-tensors KV scheme on 0.15-0.21,
    which replaces a typed dtype too."""
    if scheme in (CT_FP8, CT_OTHER) and version is not None and _ct(run_dtype, scheme, version)[0] != run_dtype:
        return None
    return run_dtype if run_dtype in choices else None

