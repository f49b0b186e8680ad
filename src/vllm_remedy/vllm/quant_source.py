"""Where vLLM finds a checkpoint's quantization section in config.json: ``quantization_config``, else
``compression_config`` (older llm-compressor / compressed-tensors exports).

Every release modelled reads it the same way, in both places that decide the method and the weights:
- the model config: ``_parse_quant_hf_config`` (config.py@0.5.5 l.258-263, @0.8.5; config/model.py@0.11.0 l.857-861)
  and, from 0.14.0, ``_normalize_quantization_config`` (transformers_utils/model_arch_config_convertor.py@0.14.0
  l.139-142, @0.30.0 l.263-264): "compressed-tensors uses a "compression_config" key", read when
  ``quantization_config`` is None (absent or null);
- the loader: ``get_quant_config`` (model_loader/weight_utils.py@0.5.5 l.138-141, @0.30.0 l.273-275), from the
  top-level config (``model_config.hf_config``), not the text config.
Apart from hf_config so that the text-config reading there keeps one hook for it.
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
