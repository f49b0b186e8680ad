"""The MLA projection widths and the quantization of ``kv_b_proj`` that vLLM's absorbed weights and backend choice
read (``memory.mla_absorbed``, ``memory.mla_block``), taken from config.json as vLLM's DeepSeek layers take them:

- ``q_lora_rank``: the query's low-rank width, 0 (null) for a full-rank ``q_proj`` (DeepSeek-V2-Lite);
  ``qk_nope_head_dim`` / ``v_head_dim``: per head, the part of K without rope and the V width (``kv_b_proj`` is
  ``kv_lora_rank x num_heads * (qk_nope_head_dim + v_head_dim)``, models/deepseek_v2.py@0.8.0, @0.11.0).
- ``kv_b_quantized``: whether a quantized checkpoint's method reaches ``kv_b_proj``: True when its
  ``quantization_config`` lists no modules to leave out, None (not known) when a list names an attention module, a
  ``kv_b`` one or a regular expression, whose reach into ``kv_b_proj`` is not read here; False for no checkpoint
  quantization (``--quantization`` online is judged where the flags are known).
- ``fp8_group``: the weight group shape an fp8 checkpoint's scales have, which vLLM 0.7.x re-quantizes its absorbed
  matrices with (``get_scale_group_shapes_for_fp8``, attention/backends/mla/utils.py@0.7.3): fp8's
  ``weight_block_size``, else per tensor (-1, -1); compressed-tensors per tensor (-1, -1) or per channel (-1, 1) by
  every group's ``weights.strategy`` (another strategy raises there) when every group's weights are ``float`` /
  ``fp8``; None for other methods, other types or mixed strategies.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# The keys each method lists left-out modules under: fp8 ``ignored_layers``, AWQ / bitsandbytes
# ``modules_to_not_convert``, compressed-tensors ``ignore``, ModelOpt ``exclude_modules``.
_SKIP_KEYS = ("ignored_layers", "modules_to_not_convert", "ignore", "exclude_modules")


@dataclass(frozen=True)
class MlaShape:
    """What an MLA layer's absorbed weights are sized from (see the module docstring)."""

    q_lora_rank: int
    qk_nope_head_dim: int
    v_head_dim: int
    kv_b_quantized: bool | None
    fp8_group: tuple[int, int] | None = None


def _skips_kv_b(qc: Mapping[str, Any]) -> bool | None:
    """False when no list of left-out modules could name ``kv_b_proj``; None when one may."""
    for key in _SKIP_KEYS:
        for entry in qc.get(key) or ():
            text = str(entry)
            if "kv_b" in text or "attn" in text or text.startswith("re:") or "*" in text:
                return None
    return False


_CT_GROUPS = {"tensor": (-1, -1), "channel": (-1, 1)}


def _fp8_group(qc: Mapping[str, Any]) -> tuple[int, int] | None:
    """The weight group shape fp8 scales have (see the module docstring)."""
    method = str(qc.get("quant_method") or "").lower()
    if method == "fp8":
        block = qc.get("weight_block_size")
        return (int(block[0]), int(block[1])) if isinstance(block, list) and len(block) == 2 else (-1, -1)
    if method != "compressed-tensors" or not isinstance(qc.get("config_groups"), Mapping):
        return None
    shapes = set()
    for group in qc["config_groups"].values():
        weights = group.get("weights") if isinstance(group, Mapping) else None
        if not isinstance(weights, Mapping) or str(weights.get("type")) not in ("float", "fp8"):
            return None  # not an fp8 group (or not read): no fp8 scales to re-quantize with
        shapes.add(_CT_GROUPS.get(str(weights.get("strategy") or "").lower()))
    return shapes.pop() if len(shapes) == 1 else None


def read(text: Mapping[str, Any], weight_bits: int) -> MlaShape | None:
    """The shape of an MLA config (one with ``kv_lora_rank``); None for any other. ``weight_bits``: the checkpoint's
    stored width (``quant_config.weight_bits``, 16 when unquantized)."""
    if not text.get("kv_lora_rank"):
        return None
    nope = int(text.get("qk_nope_head_dim") or 0)
    qc = text.get("quantization_config")
    quantized: bool | None = False
    group = None
    if isinstance(qc, Mapping) and weight_bits < 16:
        skips = _skips_kv_b(qc)
        quantized = None if skips is None else True
        group = _fp8_group(qc)
    return MlaShape(q_lora_rank=int(text.get("q_lora_rank") or 0), qk_nope_head_dim=nope,
                    v_head_dim=int(text.get("v_head_dim") or nope), kv_b_quantized=quantized, fp8_group=group)
