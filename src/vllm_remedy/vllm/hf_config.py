"""Read a Hugging Face ``config.json`` dict the way vLLM reads it for its memory budget.

vLLM derives the default ``max_model_len`` and the KV-cache shape from a handful of keys whose
names and rules differ between model families; getting one wrong moves the predicted KV cache
by a factor (head_dim on Gemma/Qwen3, the rope factor on YaRN models). Rules follow
``vllm/config.py::_get_and_verify_max_len`` and ``ModelConfig.get_head_size`` (0.6 – 0.19).
Pure: callers pass the parsed JSON in.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vllm_remedy.errors import UserError

# The keys vLLM scans for the model's maximum length; the smallest present value wins.
MAX_LEN_KEYS = (
    "max_position_embeddings",
    "n_positions",
    "max_seq_len",
    "seq_length",
    "model_max_length",
    "max_target_positions",
    "max_sequence_length",
    "max_seq_length",
    "seq_len",
)
# Rope types whose max_position_embeddings is already the long-context length.
UNSCALED_ROPE_TYPES = frozenset({"su", "longrope", "llama3", "default", "mrope"})
DEFAULT_MAX_LEN = 2048  # vLLM's fallback when no key is present


def text_config(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """The language-model part: multimodal configs nest it under ``text_config`` (or ``llm_config``)."""
    for key in ("text_config", "llm_config", "language_config"):
        inner = config.get(key)
        if isinstance(inner, Mapping) and ("hidden_size" in inner or "num_hidden_layers" in inner):
            merged = dict(inner)
            # Some checkpoints keep quantization / dtype only at the top level.
            for outer_key in ("quantization_config", "torch_dtype"):
                if outer_key not in merged and outer_key in config:
                    merged[outer_key] = config[outer_key]
            return merged
    return config


def require_int(config: Mapping[str, Any], *keys: str, name: str = "config.json") -> int:
    """The first present key as a positive int, else a UserError naming the keys."""
    for key in keys:
        value = config.get(key)
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or int(value) <= 0:
                raise UserError(f"{name}: {key} must be a positive integer, got {value!r}")
            return int(value)
    raise UserError(f"{name}: missing {' / '.join(keys)}; is this a Hugging Face causal-LM config.json?")


def num_kv_heads(config: Mapping[str, Any], num_heads: int) -> int:
    """KV heads: GQA key names vary; absent means multi-head attention (one KV head per head)."""
    for key in ("num_key_value_heads", "n_head_kv", "num_kv_heads", "multi_query_group_num"):
        value = config.get(key)
        if value:
            return int(value)
    if config.get("multi_query") is True:
        return 1
    return num_heads


def head_dim(config: Mapping[str, Any], hidden_size: int, num_heads: int) -> int:
    """``head_dim`` when the config states it (Gemma, Qwen3, Llama-3.2), else hidden / heads."""
    explicit = config.get("head_dim")
    if explicit:
        return int(explicit)
    if config.get("qk_nope_head_dim") and config.get("qk_rope_head_dim"):  # MLA (DeepSeek)
        return int(config["qk_nope_head_dim"]) + int(config["qk_rope_head_dim"])
    return hidden_size // num_heads


def rope_type(config: Mapping[str, Any]) -> str | None:
    """The rope scaling type after vLLM's patch: ``type`` → ``rope_type``, ``su`` → ``longrope``."""
    scaling = config.get("rope_scaling")
    if not isinstance(scaling, Mapping):
        return None
    kind = scaling.get("rope_type", scaling.get("type"))
    if kind == "su":
        return "longrope"
    if "mrope_section" in scaling and kind in (None, "default", "mrope"):
        return "mrope"
    return str(kind) if kind is not None else "default"


def derived_max_model_len(config: Mapping[str, Any]) -> int:
    """The default ``max_model_len``: smallest length key, times the rope factor except su/longrope/llama3.

    YaRN restarts from ``original_max_position_embeddings``; Gemma-3 is already scaled.
    """
    present = [int(config[k]) for k in MAX_LEN_KEYS if isinstance(config.get(k), (int, float))]
    derived = float(min(present)) if present else float(DEFAULT_MAX_LEN)
    if isinstance(config.get("model_max_length"), (int, float)):  # Command-R / Cohere: this key wins
        derived = float(config["model_max_length"])
    kind = rope_type(config)
    model_type = str(config.get("model_type", ""))
    if kind is not None and kind not in UNSCALED_ROPE_TYPES and "gemma3" not in model_type:
        scaling = config["rope_scaling"]
        factor = float(scaling.get("factor", 1.0))
        if kind == "yarn" and scaling.get("original_max_position_embeddings"):
            derived = float(scaling["original_max_position_embeddings"])
        derived *= factor
    return int(derived)


def sliding_window(config: Mapping[str, Any]) -> int | None:
    """The attention window when the model actually uses one (Qwen2 ships it disabled)."""
    if config.get("use_sliding_window") is False:
        return None
    window = config.get("sliding_window")
    if isinstance(window, list):
        windows = [int(w) for w in window if w]
        return min(windows) if windows else None
    return int(window) if window else None


def quantization(config: Mapping[str, Any]) -> str | None:
    """``quantization_config.quant_method`` (fp8, awq, gptq, compressed-tensors, bitsandbytes, ...)."""
    qc = config.get("quantization_config")
    if isinstance(qc, Mapping) and qc.get("quant_method"):
        return str(qc["quant_method"]).lower()
    return None


def weight_bits(config: Mapping[str, Any]) -> int | None:
    """Stored bits per quantized weight, when the quantization config says so."""
    qc = config.get("quantization_config")
    if not isinstance(qc, Mapping):
        return None
    method = str(qc.get("quant_method", "")).lower()
    if method in ("fp8", "fbgemm_fp8", "modelopt"):
        return 8
    if qc.get("bits"):
        return int(qc["bits"])
    if qc.get("w_bit"):
        return int(qc["w_bit"])
    groups = qc.get("config_groups")
    if isinstance(groups, Mapping):  # compressed-tensors
        for group in groups.values():
            weights = group.get("weights") if isinstance(group, Mapping) else None
            if isinstance(weights, Mapping) and weights.get("num_bits"):
                return int(weights["num_bits"])
    if qc.get("load_in_4bit"):
        return 4
    if qc.get("load_in_8bit"):
        return 8
    return None


def num_experts(config: Mapping[str, Any]) -> tuple[int, int, int | None]:
    """(experts, experts per token, per-expert intermediate size) — (0, 0, None) for dense models."""
    experts = config.get("num_local_experts") or config.get("num_experts") or config.get("n_routed_experts") or 0
    per_token = config.get("num_experts_per_tok") or config.get("moe_topk") or 0
    inter = config.get("moe_intermediate_size")
    return int(experts), int(per_token), int(inter) if inter else None


def torch_dtype(config: Mapping[str, Any]) -> str:
    """The checkpoint dtype vLLM's ``--dtype auto`` resolves to (float32 checkpoints are served in bf16)."""
    raw = str(config.get("torch_dtype") or config.get("dtype") or "bfloat16").replace("torch.", "")
    return "bfloat16" if raw == "float32" else raw
