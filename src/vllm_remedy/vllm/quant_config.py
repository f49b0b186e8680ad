"""What a checkpoint's ``quantization_config`` says of its stored weights, read as vLLM reads it.

Apart from hf_config because quantization is its own vocabulary (methods, bits, zero points, which layers are
packed) that the weight sizing consults, while the rest of config.json describes shapes and lengths.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vllm_remedy.vllm.hf_config import cannot_predict


def quantization(config: Mapping[str, Any]) -> str | None:
    """``quantization_config.quant_method`` (fp8, awq, gptq, compressed-tensors, bitsandbytes, ...)."""
    qc = config.get("quantization_config")
    if isinstance(qc, Mapping) and qc.get("quant_method"):
        return str(qc["quant_method"]).lower()
    if isinstance(qc, Mapping) and (qc.get("load_in_4bit") or qc.get("load_in_8bit")):
        return "bitsandbytes"  # older bitsandbytes checkpoints name no method
    return None


# Methods whose stored weights are 8-bit floats, whatever else their config says.
_FP8_METHODS = frozenset({"fp8", "fbgemm_fp8", "ptpc_fp8"})
# Integer methods that state ``bits`` (GPTQ, AutoRound) or ``w_bit`` (AutoAWQ).
_INT_METHODS = frozenset({"awq", "awq_marlin", "gptq", "gptq_marlin", "gptq_marlin_24", "auto-round", "auto_round"})


def weight_bits(config: Mapping[str, Any]) -> int | None:
    """Stored bits per quantized weight; None for an unquantized checkpoint. A method or a config whose
    bits cannot be read raises ``cannot predict`` instead of sizing the weights as 16-bit."""
    qc = config.get("quantization_config")
    if not isinstance(qc, Mapping):
        return None
    method = str(qc.get("quant_method", "")).lower()
    if method in _FP8_METHODS:
        return 8
    if method == "mxfp4":  # gpt-oss: MoE experts only, see ``quantized_scope``
        return 4
    if method == "modelopt":
        algo = str(qc.get("quant_algo", "FP8")).upper()
        if algo in ("FP8", "NVFP4"):
            return 8 if algo == "FP8" else 4
        raise cannot_predict(config, f"quantization_config.quant_algo {algo} is not modelled")
    if method in _INT_METHODS:
        bits = qc.get("bits") or qc.get("w_bit")
        if not bits:
            raise cannot_predict(config, f"quantization_config ({method}) states no bits / w_bit")
        return int(bits)
    if method == "compressed-tensors":
        groups = qc.get("config_groups")
        for group in groups.values() if isinstance(groups, Mapping) else ():
            weights = group.get("weights") if isinstance(group, Mapping) else None
            if isinstance(weights, Mapping) and weights.get("num_bits"):
                return int(weights["num_bits"])
        raise cannot_predict(config, "quantization_config (compressed-tensors) has no config_groups.*.weights.num_bits")
    if method == "bitsandbytes" or qc.get("load_in_4bit") or qc.get("load_in_8bit"):
        if qc.get("load_in_4bit"):
            return 4
        if qc.get("load_in_8bit"):
            return 8
        raise cannot_predict(config, "quantization_config (bitsandbytes) sets neither load_in_4bit nor load_in_8bit")
    if qc.get("bits") and not method:
        return int(qc["bits"])
    raise cannot_predict(config, f"quantization_config.quant_method {method or '(none)'!r} is not modelled")


def zero_points(config: Mapping[str, Any]) -> bool:
    """Whether packed integer weights carry zero points: compressed-tensors registers ``weight_zero_point`` only for
    asymmetric schemes (compressed_tensors_wNa16.py@0.10.0 ``create_weights``), so a config whose every weight group
    says ``symmetric: true`` has none; GPTQ/AWQ layouts always store ``qzeros``."""
    qc = config.get("quantization_config")
    if not isinstance(qc, Mapping) or str(qc.get("quant_method", "")).lower() != "compressed-tensors":
        return True
    groups = qc.get("config_groups")
    groups = groups.values() if isinstance(groups, Mapping) else ()
    weights = [g.get("weights") for g in groups if isinstance(g, Mapping)]
    return not weights or not all(isinstance(w, Mapping) and w.get("symmetric") is True for w in weights)


def quantized_scope(config: Mapping[str, Any]) -> str:
    """Which weights the checkpoint stores packed: "experts" (mxfp4: attention, router and embeddings stay
    bf16) or "linear" (every linear layer; embeddings and the vision tower stay 16-bit)."""
    return "experts" if quantization(config) == "mxfp4" else "linear"


DEFAULT_GROUP_SIZE = 128  # GPTQ's, AutoAWQ's and llm-compressor's default when a config states none


def group_size(config: Mapping[str, Any]) -> int | None:
    """Input channels sharing one scale (and zero point) in packed integer weights; None: one per output channel.

    vLLM shapes the scales ``[in / group_size, out]`` from the config (gptq.py / awq.py ``create_weights``@0.8.3, and
    compressed-tensors' ``weights.group_size``, compressed_tensors_wNa16.py@0.10.0), so a group of 32 stores four times
    the scales of 128: +15.6 % on the packed weights instead of +3.9 %. ``-1`` (GPTQ) and compressed-tensors' channel
    strategy mean per output channel. AWQ reads ``q_group_size`` before ``group_size`` and GPTQ/AutoRound
    ``group_size`` (``get_from_keys`` in awq.py / gptq.py / auto_round.py ``from_config``@0.8.3), which raises when
    neither is there: that config cannot be predicted, nor one whose size is not a JSON integer."""
    qc = config.get("quantization_config")
    if not isinstance(qc, Mapping):
        return DEFAULT_GROUP_SIZE
    method = str(qc.get("quant_method", "")).lower()
    keys = ("q_group_size", "group_size") if method.startswith("awq") else ("group_size",)
    raw: Any = next((qc[k] for k in keys if k in qc), None)
    if method == "compressed-tensors":
        groups = qc.get("config_groups")
        for group in groups.values() if isinstance(groups, Mapping) else ():
            weights = group.get("weights") if isinstance(group, Mapping) else None
            if isinstance(weights, Mapping) and weights.get("num_bits"):
                if str(weights.get("strategy", "")).lower() == "channel":
                    return None
                raw = weights.get("group_size")
                break
    if raw is None:
        if method in _INT_METHODS:
            raise cannot_predict(config, f"quantization_config ({method}) states no {' / '.join(keys)}, which vLLM "
                                         "requires (get_from_keys raises)")
        return DEFAULT_GROUP_SIZE
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise cannot_predict(config, f"quantization_config group_size {raw!r} is not an integer")
    if raw == -1:
        return None
    if raw <= 0:
        raise cannot_predict(config, f"quantization_config group_size {raw} is neither -1 nor positive")
    return raw
