"""The vision encoder's share of the profile run: what a multimodal model's dummy encoder pass holds at the peak.

A module of its own because the terms differ by tower and by release (the generic image tower, Qwen3-VL's deepstack
rows padded on 0.11-0.12) and ``terms.py`` had reached its size limit; ``terms`` adds ``encoder_gib`` to the runner's
profile peak (V1, and Model Runner V2 from ``terms.MRV2_ENCODER_PROFILE_SINCE``).
"""

from __future__ import annotations

import math

from vllm_remedy.vllm.catalog import GIB, ModelSpec
from vllm_remedy.vllm.memory.resolved import Resolved

# V1 profiles the vision encoder on the largest dummy images that fit the encoder budget
# (max(max_num_batched_tokens, tokens of one image)) and holds their output embeddings through the
# language-model dummy run. Not fitted: no public startup log of a vision model with these figures was
# found; the MLP's input and output per patch are counted as the encoder's peak.
ENCODER_ACTIVATIONS_PER_PATCH = 2
# vLLM 0.11.0-0.12.x pad every dummy encoder output to the whole encoder budget before caching it for the dummy forward
# (v1/worker/gpu_model_runner.py@0.11.0 ``profile_run``: ``output.new_zeros((encoder_budget, ...))`` when an item has
# fewer rows, held in ``encoder_cache`` through ``_dummy_run`` and ``_dummy_sampler_run``); 0.13.0 caches the outputs
# as they are (same function@0.13.0). 0.10.2 has no padding and no Qwen3-VL.
ENCODER_PADDING_SINCE = (0, 11, 0)
ENCODER_PADDING_UNTIL = (0, 13, 0)
# Qwen3-VL's largest dummy items as vLLM 0.11-0.12 count them (model_executor/models/qwen3_vl.py@0.11.0): an image of
# the processor's longest_edge 16,777,216 px is 16,384 tokens (32 x 32 px each); a video of 25,165,824 px over all
# frames is 12,288 tokens, counted 12.5 times for its timestamp text (``get_max_video_tokens``) = 153,600. These are
# the official processors' sizes; a checkpoint whose preprocessor_config.json caps images lower (the
# ``image-max-pixels`` input, ``qwen3_vl_image_tokens``) profiles more, smaller images. A 4 x RTX 3090 log prints the
# video budget: "Encoder cache will be initialized with a budget of 153600 tokens, and profiled with 1 video items".
QWEN3_VL_IMAGE_TOKENS = 16384
QWEN3_VL_VIDEO_TOKENS = 153600
# Pixels per side of one Qwen3-VL language-model token: patch_size 16 x spatial_merge_size 2 (the ``factor`` vLLM passes
# to ``smart_resize``, qwen3_vl.py@0.11.0 ``_get_vision_info``).
QWEN3_VL_TOKEN_PX = 32
MM_DEFAULT_LIMIT_PER_PROMPT = 999  # V1's default per modality (config/multimodal.py@0.11.0 get_limit_per_prompt)
# Qwen2-VL's vision transformer on V1 0.10-0.11 (``qwen2_vl_tower_gib``): read in model_executor/models/qwen2_vl.py at
# 0.10.0, 0.10.2 and 0.11.0 (same MLP code; the rotary takes q and k together from 0.11.0, ``QK_CONCAT_ROTARY_SINCE``);
# 0.11.1 dropped the q/k/v copies and replaced the rotary (``dispatch_rotary_emb_function``), so it is not sized.
QWEN2_VL_TOWER_SINCE = (0, 10, 0)
QWEN2_VL_TOWER_UNTIL = (0, 11, 1)
# Live rows of embed_dim width at the attention's peak, in model-dtype tensors: the block input, norm1's output, the
# fused qkv output (3, kept by the local name while the views are copied), contiguous q, k, v (3), and the rotated copy
# being cast back (1); plus two float32 rows (``apply_rotary_pos_emb_vision``: ``t.float()`` and the rotary kernel's
# output, vllm_flash_attn/layers/rotary.py ``apply_rotary``: ``torch.empty_like`` unless in place).
QWEN2_VL_ATTENTION_ROWS = 9
QWEN2_VL_ATTENTION_FP32_ROWS = 2
# The MLP's peak: the block input and norm2's output (2 rows of embed_dim) with fc1's output and QuickGELU's
# buffers (rows of the MLP width): the CUDA kernel writes one output (2 rows); the native ``x * sigmoid(1.702 x)`` holds
# two temporaries besides fc1's output (3 rows). vLLM disables custom ops by default under Inductor
# (model_executor/custom_op.py@0.10.2 ``default_on``), so a compiled start runs the native form, --enforce-eager the
# kernel.
QWEN2_VL_MLP_ROWS_KERNEL = 2
QWEN2_VL_MLP_ROWS_NATIVE = 3
# At 0.11.0 both towers rotate q and k together (qwen2_vl.py, qwen2_5_vl.py@0.11.0: ``torch.cat([q, k], dim=0)`` then
# ``apply_rotary_pos_emb_vision`` on the pair); 0.10.x rotated q, then k. At the
# pair's cast back: block input, norm1's output, fused qkv (3), contiguous q, k, v (3), the pair (2) and its cast-back
# copy (2) = 12 model-dtype rows; the pair's ``t.float()`` and the rotary kernel's float32 output, 2 rows each.
QK_CONCAT_ROTARY_SINCE = (0, 11, 0)
QK_CONCAT_ATTENTION_ROWS = 12
QK_CONCAT_ATTENTION_FP32_ROWS = 4
# Qwen2.5-VL's vision transformer (``qwen2_vl_tower_gib``, ``_mlp_bytes``): read in model_executor/models/qwen2_5_vl.py
# at 0.10.2 and 0.11.0 (RMSNorm, gated SiLU MLP, window attention). Sized post hoc, after the A100 0.11.0 start was
# measured blind at +45.7 %. 0.10.0 has another block (separate gate and up projections, no fused residual norm);
# 0.11.1 rewrote the attention (no q/k/v copies, the rotary on a reshaped view) and can compile the tower
# (``support_torch_compile``). Rows of the MLP width at its peak: gate_up (2) plus the kernel's output (1), or the
# native form's silu output and product (2).
QWEN2_5_VL_TOWER_SINCE = (0, 10, 2)
QWEN2_5_VL_TOWER_UNTIL = (0, 11, 1)
QWEN2_5_VL_MLP_ROWS_KERNEL = 3
QWEN2_5_VL_MLP_ROWS_NATIVE = 4


def encoder_gib(model: ModelSpec, res: Resolved) -> float:
    """The vision encoder's profile run on V1: Qwen3-VL's padded deepstack rows (``qwen3_vl_encoder_cache_gib``), any
    other tower's dummy images filling the encoder budget and their embeddings; 0 for a text-only model or V0."""
    if res.rules.engine != "V1":
        return 0.0
    if model.mm_embed_dim:
        return qwen3_vl_encoder_cache_gib(model, res)
    if _qwen2_vl_tower_applies(model, res):
        return _qwen2_vl_held_gib(model, res)
    if not model.image_tokens or not model.image_patches:
        return 0.0
    budget = max(res.mnbt, model.image_tokens)
    images = max(1, budget // model.image_tokens)
    cache = budget * model.hidden_size * res.weight_dtype_bytes
    forward = (
        images
        * model.image_patches
        * model.vision_intermediate
        * res.weight_dtype_bytes
        * ENCODER_ACTIVATIONS_PER_PATCH
    )
    return max(cache, forward) / GIB


def qwen3_vl_encoder_cache_gib(model: ModelSpec, res: Resolved) -> float:
    """The padded encoder cache a Qwen3-VL profile holds through the language model's dummy forward and sampler on
    0.11-0.12 (``ENCODER_PADDING_SINCE``): items x budget rows x the deepstack-wide row (out_hidden_size x (1 +
    deepstack levels): ``Qwen3_VisionTransformer.forward`` concatenates them). Budget and item count follow
    ``MultiModalBudget`` (v1/worker/utils.py@0.11.0): the modality with the most tokens per item (video unless
    --limit-mm-per-prompt sets it to 0), budget max(mnbt, its tokens), items min(budget // tokens, requests x items per
    prompt), requests capped by mnbt // tokens without chunked prefill. The tower's own forward is freed before that
    and is not sized. Other releases: 0 (unpadded outputs, a few hundred MiB at most, not modelled; the towers give no
    image size)."""
    if not ENCODER_PADDING_SINCE <= res.rules.version < ENCODER_PADDING_UNTIL:
        return 0.0
    limits = dict(res.mm_limits)
    image = qwen3_vl_image_tokens(res.image_max_pixels)
    sizes = {m: t for m, t in (("image", image), ("video", QWEN3_VL_VIDEO_TOKENS)) if limits.get(m, 1)}
    if not sizes:
        return 0.0
    modality, per_item = max(sizes.items(), key=lambda item: item[1])
    budget = max(res.mnbt, per_item)
    per_prompt = max(1, min(limits.get(modality, MM_DEFAULT_LIMIT_PER_PROMPT), res.max_model_len // per_item))
    requests = res.max_num_seqs if res.chunked_prefill else min(res.max_num_seqs, res.mnbt // per_item)
    items = max(1, min(budget // per_item, requests * per_prompt))
    return items * budget * model.mm_embed_dim * res.weight_dtype_bytes / GIB


def qwen3_vl_image_tokens(max_pixels: int | None) -> int:
    """Tokens of Qwen3-VL's largest dummy image. vLLM 0.11.0 sizes it as ``smart_resize`` of a 9,999,999 px square image
    with the image processor's ``size["longest_edge"]`` as max_pixels (qwen2_vl.py@0.11.0
    ``get_image_size_with_most_features``, via qwen3_vl.py@0.11.0 ``_get_vision_info``; transformers' smart_resize
    shrinks it to floor(sqrt(max_pixels) / factor) x factor a side), one token per 32 x 32 px. The processor is the
    checkpoint's own (preprocessor_config.json); None takes the official Qwen3-VL processor's 16,384 tokens."""
    if not max_pixels:
        return QWEN3_VL_IMAGE_TOKENS
    side = max(1, math.isqrt(max_pixels) // QWEN3_VL_TOKEN_PX)
    return side * side


def _qwen2_vl_tower_applies(model: ModelSpec, res: Resolved) -> bool:
    """The image profile only: with the default video limit a dummy video is one frame pair, the image's tokens, and
    the image wins the tie ("profiled with 1 image items"); a video profile (a small video limit and a long
    max_model_len give more frames, ``get_num_frames_with_most_features``, qwen2_vl.py@0.10.2) is not sized."""
    since, until = (
        (QWEN2_5_VL_TOWER_SINCE, QWEN2_5_VL_TOWER_UNTIL) if model.vit_family == "qwen2_5_vl"
        else (QWEN2_VL_TOWER_SINCE, QWEN2_VL_TOWER_UNTIL)
    )
    return (bool(model.vit_embed_dim) and res.rules.engine == "V1" and not res.runner_v2
            and dict(res.mm_limits).get("image", 1) != 0 and since <= res.rules.version < until)


def _qwen2_vl_items(model: ModelSpec, res: Resolved) -> int:
    """Dummy images in the profile batch (``MultiModalBudget``, v1/worker/utils.py@0.10.2): budget max(mnbt, one
    image's tokens) // tokens, capped by requests x images per prompt (at least one, even above max_model_len)."""
    per_item = model.image_tokens
    budget = max(res.mnbt, per_item)
    limit = dict(res.mm_limits).get("image", MM_DEFAULT_LIMIT_PER_PROMPT)
    per_prompt = max(1, min(limit, res.max_model_len // per_item))
    requests = res.max_num_seqs if res.chunked_prefill else min(res.max_num_seqs, res.mnbt // per_item)
    return max(1, min(budget // per_item, requests * per_prompt))


def _qwen2_vl_held_gib(model: ModelSpec, res: Resolved) -> float:
    """What the Qwen2-VL profile keeps through the language model's dummy run and sampler: the dummy batch's
    pixel_values (``profile_run`` holds ``batched_dummy_mm_inputs`` until it returns, v1/worker/gpu_model_runner.py
    @0.10.2; in the model dtype, ``_pixel_bytes``) and the cached encoder outputs (rows of the language model's width:
    an image's tokens, or on 0.11 the whole encoder budget, ``ENCODER_PADDING_SINCE``)."""
    items = _qwen2_vl_items(model, res)
    pixels = items * model.image_patches * model.vit_patch_values * _pixel_bytes(res)
    rows = model.image_tokens
    if ENCODER_PADDING_SINCE <= res.rules.version < ENCODER_PADDING_UNTIL:
        rows = max(res.mnbt, model.image_tokens)
    cache = items * rows * model.hidden_size * res.weight_dtype_bytes
    return (pixels + cache) / GIB


def _pixel_bytes(res: Resolved) -> int:
    """Bytes of one pixel value on the GPU: vLLM casts the HF processor's floating outputs to the model dtype before
    they are cached or batched ("this emulates output.to(dtype=self.model_config.dtype)": inputs/registry.py@0.10.0 and
    @0.10.2 ``maybe_cast_dtype``, multimodal/processing.py@0.11.0 and @0.12.0 ``_postprocess_output``), the dummy
    profile image included (``_call_hf_processor`` -> ``ctx.call_hf_processor``)."""
    return res.weight_dtype_bytes


def _attention_bytes(model: ModelSpec, res: Resolved) -> int:
    """One block's attention peak per patch: q and k rotated one after the other (0.10.x) or as one concatenated
    pair (``QK_CONCAT_ROTARY_SINCE``); the same code in both towers (qwen2_vl.py, qwen2_5_vl.py at 0.10.2 and
    0.11.0). FlashAttention's varlen kernel keeps no score matrix, so window and full-attention blocks
    (Qwen2.5-VL's ``fullatt_block_indexes``) hold the same rows."""
    dt = res.weight_dtype_bytes
    if res.rules.version >= QK_CONCAT_ROTARY_SINCE:
        return model.vit_embed_dim * (QK_CONCAT_ATTENTION_ROWS * dt + QK_CONCAT_ATTENTION_FP32_ROWS * 4)
    return model.vit_embed_dim * (QWEN2_VL_ATTENTION_ROWS * dt + QWEN2_VL_ATTENTION_FP32_ROWS * 4)


def _mlp_bytes(model: ModelSpec, res: Resolved) -> int:
    """One block's MLP peak per patch. Qwen2-VL: ``QWEN2_VL_MLP_ROWS_*``. Qwen2.5-VL (qwen2_5_vl.py@0.10.2 and
    @0.11.0 ``Qwen2_5_VisionBlock``, ``Qwen2_5_VisionMLP``): ``norm2(x, residual=x_attn)`` then gate_up_proj (2 rows
    of the MLP width) and SiluAndMul. Eager runs the kernels: ``fused_add_rms_norm`` works in place (the block input
    and the attention output, 2 rows of embed_dim) and the activation writes one row. Compiled, custom ops are off
    (``QWEN2_VL_MLP_ROWS_NATIVE``): the native RMSNorm returns new normed and residual rows (4 of embed_dim) and
    ``F.silu(x[..., :d]) * x[..., d:]`` holds silu's output and the product (4 rows of the MLP width)."""
    dt = res.weight_dtype_bytes
    if model.vit_family == "qwen2_5_vl":
        embed_rows, mlp_rows = (2, QWEN2_5_VL_MLP_ROWS_KERNEL) if res.enforce_eager else (4, QWEN2_5_VL_MLP_ROWS_NATIVE)
        return embed_rows * model.vit_embed_dim * dt + mlp_rows * model.vit_mlp_dim * dt
    mlp_rows = QWEN2_VL_MLP_ROWS_KERNEL if res.enforce_eager else QWEN2_VL_MLP_ROWS_NATIVE
    return 2 * model.vit_embed_dim * dt + mlp_rows * model.vit_mlp_dim * dt


def qwen2_vl_tower_gib(model: ModelSpec, res: Resolved) -> float:
    """The Qwen2-VL or Qwen2.5-VL vision transformer's own peak in the profile run (V1; ``QWEN2_VL_TOWER_SINCE``,
    ``QWEN2_5_VL_TOWER_SINCE``): a phase of its own, freed before the language model's dummy run (``profile_run``
    keeps only the outputs), so the caller takes the larger of it and the language-model phases. The pixel_values
    stay allocated, and one block's attention (``_attention_bytes``) or MLP (``_mlp_bytes``) peaks over every patch of
    the dummy images. 0 for other towers and releases (both get the generic tower term of ``encoder_gib`` there, not
    read for them)."""
    if not _qwen2_vl_tower_applies(model, res):
        return 0.0
    patches = _qwen2_vl_items(model, res) * model.image_patches
    pixels = model.vit_patch_values * _pixel_bytes(res)
    return patches * (pixels + max(_attention_bytes(model, res), _mlp_bytes(model, res))) / GIB
