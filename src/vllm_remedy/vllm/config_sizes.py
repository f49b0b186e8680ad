"""The stated sizes of a config.json that must be numbers in range, refused in one line naming the key.

Why apart from ``hf_config``'s readers: these keys are checked once, before any reader turns them into a shape
(``catalog`` calls ``check_sizes`` first); ``hf_config.require_int`` covers the sizes a config must state.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from vllm_remedy.errors import UserError
from vllm_remedy.vllm.hf_config import MAX_LEN_KEYS

# Sizes that, when a config states them (not null), must be positive: a zero or negative one gave "fits" with a
# max_model_len of 0 or a KV cache of no heads, a silent wrong number (vLLM takes a stated value as it is).
POSITIVE_KEYS = (
    *MAX_LEN_KEYS,
    "num_key_value_heads",
    "n_head_kv",
    "num_kv_heads",
    "multi_query_group_num",
    "head_dim",
    "intermediate_size",
    "ffn_dim",
    "moe_intermediate_size",
    "kv_lora_rank",
    "qk_nope_head_dim",
    "qk_rope_head_dim",
)
# Counts where 0 means "none" (a dense model, no window) but a negative value is a broken config.
NON_NEGATIVE_KEYS = (
    "num_local_experts",
    "num_experts",
    "n_routed_experts",
    "num_experts_per_tok",
    "experts_per_token",
    "moe_topk",
    "sliding_window",
)


def _size(value: Any, minimum: int) -> bool:
    """Whether finite ``value`` is a number whose integer part is at least ``minimum`` (JSON has one number type:
    ``4096.0`` is a size; ``true``, ``"4096"`` and 0.5 are not)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return int(value) >= minimum


def _check(name: str, key: str, value: Any, minimum: int, expected: str) -> None:
    if isinstance(value, float) and not math.isfinite(value):  # 1e400 parses as inf, NaN as nan
        raise UserError(f"{name}: not a usable model config ({key} is {value!r})")
    if not _size(value, minimum):
        raise UserError(f"{name}: {key} must be {expected}, got {value!r}")


def check_sizes(config: Mapping[str, Any], name: str = "config.json") -> None:
    """Refuse, in one line naming ``name`` and the key, a stated size that is zero, negative or not a number;
    ``require_int`` covers the sizes a config must state, this the ones it may."""
    for keys, minimum, expected in ((POSITIVE_KEYS, 1, "a positive integer"),
                                    (NON_NEGATIVE_KEYS, 0, "an integer >= 0")):
        for key in keys:
            value = config.get(key)
            for item in value if key == "sliding_window" and isinstance(value, list) else [value]:
                if item is not None:
                    _check(name, key, item, minimum, expected)
    scaling = config.get("rope_scaling")
    if isinstance(scaling, Mapping):
        for key in ("factor", "original_max_position_embeddings"):
            value = scaling.get(key)
            if value is not None:
                _check(name, f"rope_scaling.{key}", value, 0, "a positive number")
                if value <= 0:
                    raise UserError(f"{name}: rope_scaling.{key} must be a positive number, got {value!r}")
