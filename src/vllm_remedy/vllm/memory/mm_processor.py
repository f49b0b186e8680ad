"""What a pod's ``--mm-processor-kwargs`` says about the memory profile: the image processor's pixel cap.

A module of its own so ``settings`` (at its size limit) only calls it; the cap sizes Qwen3-VL's dummy profile image
(``encoder.qwen3_vl_image_tokens``).
"""

from __future__ import annotations

import json

from vllm_remedy.errors import UserError


def mm_processor_max_pixels(value: str) -> int | None:
    """The image cap a ``--mm-processor-kwargs`` JSON object sets, or None. vLLM merges these kwargs into the HF
    processor it sizes the dummy image with (multimodal/processing.py and transformers_utils/processor.py@0.11.0
    ``_merge_mm_kwargs``), and the Qwen2-VL fast image processor Qwen3-VL uses lets ``max_pixels`` override
    ``size["longest_edge"]`` (transformers 4.57.1 image_processing_qwen2_vl_fast.py ``__init__``)."""
    try:
        data = json.loads(value)
    except ValueError as exc:
        raise UserError(f"mm-processor-kwargs: {value!r} is not a JSON object") from exc
    if not isinstance(data, dict):
        raise UserError(f"mm-processor-kwargs: {value!r} is not a JSON object")
    size = data.get("size")
    cap = data.get("max_pixels", size.get("longest_edge") if isinstance(size, dict) else None)
    if isinstance(cap, bool) or not isinstance(cap, int | float) or cap <= 0:
        return None  # not a pixel count this model reads; left to vLLM and transformers to judge
    return int(cap)
