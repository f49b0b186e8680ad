"""Where vLLM finds a checkpoint's quantization section in config.json: ``quantization_config``, else
``compression_config`` (older llm-compressor / compressed-tensors exports); and the KV-cache scheme a ModelOpt
section states (``kv_cache_scheme``), which ``kv_auto`` resolves ``--kv-cache-dtype auto`` from.

Every release modelled reads it the same way, in both places that decide the method and the weights:
- the model config: ``_parse_quant_hf_config`` (config.py@0.5.5 l.258-263, @0.8.5; config/model.py@0.11.0 l.857-861)
  and, from 0.14.0, ``_normalize_quantization_config`` (transformers_utils/model_arch_config_convertor.py@0.14.0
  l.139-142, @0.30.0 l.263-264): "compressed-tensors uses a "compression_config" key", read when
  ``quantization_config`` is None (absent or null);
- the loader: ``get_quant_config`` (model_loader/weight_utils.py@0.5.5 l.138-141, @0.30.0 l.273-275), from the
  top-level config (``model_config.hf_config``), not the text config.
Applied by ``ModelSpec.from_hf_config`` to the text config ``hf_config`` reads, so every quantization reader
(``quant_config``, ``quant_exclusions``, ``mla_shape``) sees the section vLLM uses.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def fold(text: dict[str, Any], config: Mapping[str, Any]) -> dict[str, Any]:
    """``text`` (the language-model config) with the top-level ``compression_config`` as its
    ``quantization_config`` when neither states one; unchanged otherwise."""
    if text.get("quantization_config") is not None or config.get("quantization_config") is not None:
        return text
    compression = config.get("compression_config")
    if compression is None:
        return text
    return {**text, "quantization_config": compression}


def kv_cache_scheme(config: Mapping[str, Any]) -> str | None:
    """The KV-cache quantization a ModelOpt checkpoint states, as ``get_kv_cache_quant_algo_string`` reads it
    (utils/torch_utils.py@0.14.0 l.239-289, @0.30.0): for a method starting with "modelopt" (the stated
    ``quant_method``, or the one ``_normalize_quantization_config`` writes for a ``producer.name`` of "modelopt",
    transformers_utils/model_arch_config_convertor.py@0.14.0 l.145-160), the first of ``kv_cache_scheme`` and
    ``kv_cache_quant_algo`` under ``quantization`` (else the section itself), then the section's own. "fp8" for the
    text "FP8" or a static 8-bit float scheme (``dynamic`` false, ``num_bits`` 8, ``type`` "float"); "nvfp4" for the
    text "NVFP4" or a 4-bit float scheme (mapped from 0.20.0 only: ``kv_auto.resolved``); None for no scheme or another
    method (any other value resolves to auto in every release)."""
    qc = config.get("quantization_config")
    if not isinstance(qc, Mapping):
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
