"""The vision encoder's share of the profile run: what a multimodal model's dummy encoder pass holds at the peak.

A module of its own because the terms differ by tower and by release (the generic image tower, Qwen3-VL's deepstack
rows padded on 0.11-0.12) and ``terms.py`` had reached its size limit; ``terms`` adds ``encoder_gib`` to the runner's
profile peak (V1, and Model Runner V2 from ``terms.MRV2_ENCODER_PROFILE_SINCE``).
"""

from __future__ import annotations

from vllm_remedy.vllm.catalog import GIB, ModelSpec
from vllm_remedy.vllm.memory.settings import Resolved

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
# the official processors' sizes (preprocessor_config.json is not an input; a checkpoint with a smaller processor, as
# Qwen3-VL-Embedding-2B's log shows, profiles more, smaller images). A 4 x RTX 3090 log prints the video budget:
# "Encoder cache will be initialized with a budget of 153600 tokens, and profiled with 1 video items".
QWEN3_VL_IMAGE_TOKENS = 16384
QWEN3_VL_VIDEO_TOKENS = 153600
MM_DEFAULT_LIMIT_PER_PROMPT = 999  # V1's default per modality (config/multimodal.py@0.11.0 get_limit_per_prompt)


def encoder_gib(model: ModelSpec, res: Resolved) -> float:
    """The vision encoder's profile run on V1: Qwen3-VL's padded deepstack rows (``qwen3_vl_encoder_cache_gib``), any
    other tower's dummy images filling the encoder budget and their embeddings; 0 for a text-only model or V0."""
    if res.rules.engine != "V1":
        return 0.0
    if model.mm_embed_dim:
        return qwen3_vl_encoder_cache_gib(model, res)
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
    sizes = {m: t for m, t in (("image", QWEN3_VL_IMAGE_TOKENS), ("video", QWEN3_VL_VIDEO_TOKENS)) if limits.get(m, 1)}
    if not sizes:
        return 0.0
    modality, per_item = max(sizes.items(), key=lambda item: item[1])
    budget = max(res.mnbt, per_item)
    per_prompt = max(1, min(limits.get(modality, MM_DEFAULT_LIMIT_PER_PROMPT), res.max_model_len // per_item))
    requests = res.max_num_seqs if res.chunked_prefill else min(res.max_num_seqs, res.mnbt // per_item)
    items = max(1, min(budget // per_item, requests * per_prompt))
    return items * budget * model.mm_embed_dim * res.weight_dtype_bytes / GIB
