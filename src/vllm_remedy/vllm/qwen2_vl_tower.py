"""Qwen2-VL and Qwen2.5-VL's vision tower as their profile run sizes it: block widths and the dummy image's patches.

Apart from ``catalog`` because it reads one model family's vision_config the way that family's vLLM code does
(its processor's pixel cap, its blocks' widths), where the catalog holds what every model's spec has.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from vllm_remedy.vllm import config_defaults

# The largest image Qwen2-VL's official processors keep: preprocessor_config.json's max_pixels 12,845,056 (= 16,384
# tokens of 28 x 28 px). vLLM sizes its dummy image from it (model_executor/models/qwen2_vl.py@0.10.2
# ``get_image_size_with_most_features``: ``smart_resize`` to max_pixels), and an RTX 4080 0.10.2 log prints the result:
# "Encoder cache will be initialized with a budget of 16384 tokens, and profiled with 1 image items". The
# preprocessor config is not an input, so a checkpoint with a smaller max_pixels is sized as the official one.
QWEN2_VL_MAX_PIXELS = 12_845_056


def tower_fields(config: Mapping[str, Any]) -> dict[str, Any]:
    """The ``catalog.ModelSpec`` fields of a Qwen2-VL or Qwen2.5-VL tower's profile geometry; {} for any other config.
    Qwen2-VL's vision_config states both ``embed_dim`` (the blocks' width) and ``hidden_size`` (the merger's output, the
    language model's width); the blocks run at embed_dim. Outside the releases ``encoder.qwen2_vl_tower_gib`` sizes, the
    generic tower term applies to this geometry."""
    if not isinstance(config.get("vision_config"), Mapping):
        return {}
    family = str(config.get("model_type"))
    # Qwen2VLVisionConfig / Qwen2_5_VLVisionConfig defaults under the keys the config omits (config_defaults): a
    # Qwen2-VL vision_config without embed_dim is 1280 wide to vLLM, not another tower.
    vc = config_defaults.vision_defaults(config)
    if family == "qwen2_vl" and vc.get("embed_dim"):
        embed = int(vc["embed_dim"])
        mlp = int(embed * float(vc["mlp_ratio"]))
    elif family == "qwen2_5_vl" and vc.get("hidden_size") and vc.get("intermediate_size"):
        # Qwen2.5-VL's blocks run at vision_config.hidden_size with a gated MLP of intermediate_size; out_hidden_size is
        # the merger's output (model_executor/models/qwen2_5_vl.py@0.11.0 ``Qwen2_5_VisionTransformer``). Its
        # processor keeps the same max_pixels (the A100 0.11.0 log: "a budget of 16384 tokens").
        embed, mlp = int(vc["hidden_size"]), int(vc["intermediate_size"])
    else:
        return {}
    patch = int(vc["patch_size"])
    merge = int(vc["spatial_merge_size"])
    side = math.isqrt(QWEN2_VL_MAX_PIXELS) // (patch * merge) * merge  # patches per side of the square dummy image
    return {
        "vision_hidden": embed,
        "vision_intermediate": mlp,
        "vit_embed_dim": embed,
        "vit_mlp_dim": mlp,
        "vit_family": family,
        "vit_patch_values": int(vc["in_channels"]) * int(vc["temporal_patch_size"]) * patch * patch,
        "image_patches": side * side,
        "image_tokens": side * side // (merge * merge),
    }
