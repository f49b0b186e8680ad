"""Parameter counts per part of a model, from the shapes in its ``config.json``.

Why per part: the parts are stored differently. An mxfp4 checkpoint (gpt-oss) packs only the routed experts;
AWQ / GPTQ / fp8 pack the linear layers but keep the embeddings and the vision tower 16-bit; an MoE model
holds every expert in memory although each token uses a few. One total cannot size all of these, so the
count is kept per part and ``memory.terms`` prices each. Pure: callers pass the parsed JSON in.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vllm_remedy.vllm import architectures, config_defaults, hf_config, mlp_kind

# Activations whose MLP has a gate (three matrices per MLP instead of two).
_GATED = ("silu", "swiglu", "gelu_pytorch_tanh_gated", "quick_gelu_gated")


def mlp_matrices(text: Mapping[str, Any]) -> int:
    """Matrices of one dense MLP or shared expert (``mlp_kind``); "cannot predict" for a family not read."""
    count = mlp_kind.matrices(text)
    if count is None:
        kind = text.get("model_type") or architectures.first_architecture(text) or "this family"
        raise hf_config.cannot_predict(text, f"the MLP of {kind} in vLLM was not read (gated or not: its weights "
                                             "are 2 or 3 matrices a layer)")
    return count


@dataclass(frozen=True)
class Params:
    """Parameters of each part, in units (not billions)."""

    embed: float  # token embedding + LM head (once when tied)
    body: float  # attention, dense MLPs, shared experts, routers
    experts: float  # routed experts, all of them
    vision: float  # vision tower and its projector

    @property
    def total(self) -> float:
        return self.embed + self.body + self.experts + self.vision


@dataclass(frozen=True)
class Vision:
    """The vision tower as the encoder-cache profiling sees it: tokens one image becomes, patches it is cut in."""

    params: float
    hidden: int
    intermediate: int
    patches: int
    tokens: int
    # Width of one encoder output row for towers whose rows carry deepstack features (Qwen3-VL: the merger's
    # out_hidden_size once per level, the main output plus each ``deepstack_visual_indexes`` entry); 0 otherwise.
    embed_dim: int = 0


def attention_params(text: Mapping[str, Any], hidden: int, heads: int, kv_heads: int, head_dim: int) -> float:
    """One layer's attention projections; DeepSeek-style (and MiniCPM3) compress K/V through ``kv_lora_rank``."""
    mla = hf_config.latent_dims(text)
    if mla is None:
        return hidden * (heads + 2 * kv_heads) * head_dim + heads * head_dim * hidden
    rank, rope = mla
    # DeepseekV2Config / DeepseekV3Config defaults are filled in (``config_defaults``); any other MLA class states
    # these or is not sized. ``q_lora_rank`` null is a full-rank query (DeepSeek-V2-Lite), absent is unknown.
    for key in ("qk_nope_head_dim", "v_head_dim", "q_lora_rank"):
        if key not in text:
            raise hf_config.cannot_predict(text, f"{key} missing (an MLA projection's width)")
    nope = int(text["qk_nope_head_dim"] or 0)
    v_dim = int(text["v_head_dim"] or nope)
    q_rank = text.get("q_lora_rank")
    q = hidden * q_rank + q_rank * heads * (nope + rope) if q_rank else hidden * heads * (nope + rope)
    kv = hidden * (rank + rope) + rank * heads * (nope + v_dim)
    return q + kv + heads * v_dim * hidden


def moe_layers(text: Mapping[str, Any], layers: int) -> int:
    """Layers with routed experts: DeepSeek keeps the first ``first_k_dense_replace`` dense, Qwen-MoE lists
    ``mlp_only_layers`` and may route only every ``decoder_sparse_step``-th layer."""
    if "n_routed_experts" in text and "first_k_dense_replace" not in text:  # DeepSeek-style: the class has one
        raise hf_config.cannot_predict(text, "first_k_dense_replace missing (the leading dense layers)")
    # decoder_sparse_step and mlp_only_layers exist only in the Qwen-MoE classes (defaults 1 and [] filled in):
    # another class routes every layer.
    dense = set(range(int(text.get("first_k_dense_replace") or 0)))
    dense |= {int(i) for i in text.get("mlp_only_layers") or ()}
    step = int(text.get("decoder_sparse_step") or 1)
    return sum(1 for i in range(layers) if i not in dense and (i + 1) % step == 0)


def text_params(
    text: Mapping[str, Any],
    hidden: int,
    layers: int,
    heads: int,
    kv_heads: int,
    head_dim: int,
    inter: int,
    vocab: int,
    tie: bool,
) -> Params:
    """Embedding, body and routed-expert parameters of the language model."""
    attn = layers * attention_params(text, hidden, heads, kv_heads, head_dim)
    experts, _, moe_inter = hf_config.num_experts(text)
    embed = vocab * hidden * (1 if tie else 2)
    if not experts:
        return Params(embed=embed, body=attn + layers * mlp_matrices(text) * hidden * inter, experts=0.0, vision=0.0)
    per_expert = 3 * hidden * (moe_inter or inter)  # routed experts: FusedMoE's w13 (gate, up) and w2
    dense = mlp_matrices(text)
    routed = moe_layers(text, layers)
    if "n_routed_experts" in text and "n_shared_experts" not in text:
        raise hf_config.cannot_predict(text, "n_shared_experts missing (the always-on experts)")
    shared = int(text.get("n_shared_experts") or 0) * dense * hidden * (moe_inter or inter)
    shared += dense * hidden * int(text.get("shared_expert_intermediate_size") or 0)
    body = attn + routed * (shared + hidden * experts) + (layers - routed) * dense * hidden * inter
    return Params(embed=embed, body=body, experts=routed * experts * per_expert, vision=0.0)


def vision(config: Mapping[str, Any], text_hidden: int) -> Vision | None:
    """The vision tower's size and image geometry, or None for a text-only model.

    Per layer: self-attention (4 h²) plus an MLP (2 or 3 h·i); a patch embedding; a projector into the
    language model's hidden size (Qwen's merger first concatenates ``spatial_merge_size``² patches).
    """
    raw = config.get("vision_config")
    if not isinstance(raw, Mapping):
        architectures.check_vision(config)
        return None
    vc = config_defaults.vision_defaults(config)  # the vision class's defaults under the keys it omits
    hidden = vc.get("hidden_size") or vc.get("embed_dim")
    layers = vc.get("num_hidden_layers") or vc.get("depth")
    if not hidden or not layers:
        raise hf_config.cannot_predict(
            config, "vision_config states no hidden_size / embed_dim or num_hidden_layers / depth"
        )
    # num_global_layers: MllamaVisionConfig's alone (default 8, filled in); other towers have none.
    hidden, layers = int(hidden), int(layers) + int(vc.get("num_global_layers") or 0)
    if vc.get("intermediate_size"):
        inter = int(vc["intermediate_size"])
    elif vc.get("mlp_ratio"):  # Qwen2-VL's blocks: ``int(embed_dim * mlp_ratio)`` (vLLM qwen2_vl.py)
        inter = int(float(vc["mlp_ratio"]) * hidden)
    else:
        raise hf_config.cannot_predict(config, "vision_config.intermediate_size missing (the tower's MLP width)")
    gated = str(vc.get("hidden_act", "")) in _GATED or str(vc.get("model_type")) == "qwen2_5_vl"
    patch = _vision_int(config, vc, "patch_size")
    # temporal_patch_size / spatial_merge_size belong to the Qwen-VL vision classes (defaults 2 filled in); a tower
    # without them embeds single frames and projects every patch.
    temporal = int(vc.get("temporal_patch_size") or 1)
    merge = int(vc.get("spatial_merge_size") or 1)
    tower = layers * (4 * hidden * hidden + (3 if gated else 2) * hidden * inter)
    tower += _vision_int(config, vc, "num_channels", "in_channels", "in_chans") * temporal * patch * patch * hidden
    merged = hidden * merge * merge
    out = int(vc.get("out_hidden_size") or text_hidden)
    projector = merged * merged + merged * out if merge > 1 else hidden * out
    side = int(vc.get("image_size") or 0) // patch
    patches = side * side if side else int(config.get("mm_tokens_per_image") or 0) * merge * merge
    tokens = int(config.get("mm_tokens_per_image") or (patches // (merge * merge)))
    deepstack = len(vc.get("deepstack_visual_indexes") or ())
    return Vision(params=float(tower + projector), hidden=hidden, intermediate=inter, patches=patches, tokens=tokens,
                  embed_dim=out * (1 + deepstack) if deepstack else 0)


def _vision_int(config: Mapping[str, Any], vc: Mapping[str, Any], *keys: str) -> int:
    """The first of ``keys`` the vision config (class defaults filled in) states; missing is ``cannot predict``."""
    for key in keys:
        if vc.get(key):
            return int(vc[key])
    raise hf_config.cannot_predict(config, f"vision_config.{keys[0]} missing (its vision class gives no default "
                                           "this project has read)")
