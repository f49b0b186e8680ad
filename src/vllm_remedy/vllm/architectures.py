"""Which model architectures the memory model may size, decided by the architecture's name.

Why by name: a stripped or hostile config.json can leave out every key that marks state-space or linear-attention
layers (``layers_block_type``, ``attn_type_list``, ...) and still look Llama-shaped; the name is what vLLM itself
dispatches on, so a known hybrid family or a name vLLM does not implement is refused here in one
``cannot predict <arch>: <what>`` line instead of a Llama-sized guess. Pure apart from the packaged name list.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import Any

from vllm_remedy.errors import UserError
from vllm_remedy.yamlfile import load_packaged

# Architectures vLLM runs with mamba, linear-attention or recurrent layers beside (or instead of) attention: their
# cache is a per-sequence state plus K/V for a few layers, not K/V per token in every layer. The registered names whose
# class implements ``IsHybrid``, ``HasInnerState`` or ``IsAttentionFree`` (model_executor/models/interfaces.py) in
# vllm/model_executor/models/registry.py@0.19.0 and @0.34.0 (whose classes partly moved to vllm/models/), plus
# MiniMax's vision model (its language model is MiniMaxText01), Phi4Flash (a mamba hybrid, supported up to 0.10.2)
# and recurrent families vLLM never registered (RWKV, RecurrentGemma, xLSTM).
STATEFUL_ARCHITECTURES = frozenset({
    "AliceAIForCausalLM", "BailingMoeV2_5ForCausalLM", "BailingMoeV3ForCausalLM",
    "BailingMoeV3VLForConditionalGeneration", "BambaForCausalLM", "ClefFlashForJointSchema", "ColBERTLfm2Model",
    "ColQwen3_5", "FalconH1ForCausalLM", "FalconMambaForCausalLM", "Glm5NextForCausalLM",
    "Glm5NextForConditionalGeneration", "GraniteMoeHybridForCausalLM", "InternS2MobiusForConditionalGeneration",
    "InternS2PreviewForConditionalGeneration", "JambaForCausalLM", "JambaForSequenceClassification",
    "KimiK31ForConditionalGeneration", "KimiK3ForConditionalGeneration", "KimiLinearForCausalLM", "Lfm2ForCausalLM",
    "Lfm2MoeForCausalLM", "Lfm2VlForConditionalGeneration", "Lfm3AudioForConditionalGeneration", "Lfm3ForCausalLM",
    "Lfm3VlForConditionalGeneration", "Mamba2ForCausalLM", "MambaForCausalLM", "MingV3ASRForConditionalGeneration",
    "MiniCPMOcrForConditionalGeneration", "MiniCPMV4_6ForConditionalGeneration", "MiniCPMV4_7ForConditionalGeneration",
    "MiniMaxForCausalLM", "MiniMaxM1ForCausalLM", "MiniMaxText01ForCausalLM", "MiniMaxVL01ForConditionalGeneration",
    "Nemotron3_5TranscribeForConditionalGeneration", "NemotronHForCausalLM", "NemotronHPuzzleForCausalLM",
    "NemotronH_Nano_Omni_Reasoning_V3", "NemotronH_Nano_VL_V2", "NemotronH_Omni_Reasoning_V3",
    "NemotronH_Super_Omni_Reasoning_V3", "OlmoHybridForCausalLM", "Phi4FlashForCausalLM", "Plamo2ForCausalLM",
    "PrithviGeoSpatialMAE", "Qwen3NextForCausalLM", "Qwen3_5ForCausalLM", "Qwen3_5ForConditionalGeneration",
    "Qwen3_5MoeForCausalLM", "Qwen3_5MoeForConditionalGeneration", "Qwen4ExpForCausalLM",
    "Qwen4ExpForConditionalGeneration", "Terratorch", "Zamba2ForCausalLM", "ZayaForCausalLM",
    "RwkvForCausalLM", "Rwkv5ForCausalLM", "Rwkv6ForCausalLM", "Rwkv7ForCausalLM", "RecurrentGemmaForCausalLM",
    "xLSTMForCausalLM",
})
# The same families by ``model_type``, for a config that names no architecture.
STATEFUL_MODEL_TYPES = frozenset({
    "bamba", "falcon_h1", "falcon_mamba", "granitemoehybrid", "jamba", "kimi_linear", "lfm2", "lfm2_moe", "lfm2_vl",
    "mamba", "mamba2", "minimax", "minimax_text_01", "minimax_m1", "nemotron_h", "plamo2", "qwen3_next", "qwen3_5",
    "qwen3_5_moe", "qwen3_5_text", "qwen3_5_moe_text", "recurrent_gemma", "rwkv", "rwkv5", "rwkv6", "rwkv7",
    "xlstm", "zamba", "zamba2",
})
# Families whose attention is multi-head latent attention in every published config (vLLM's deepseek_v2.py): without
# ``kv_lora_rank`` the per-token latent width is unknown.
MLA_ARCHITECTURES = frozenset({"DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM", "DeepseekV32ForCausalLM"})
# Vision-language families whose tower is described by ``vision_config`` (transformers' config classes): without it
# the tower's weights and its encoder-cache profile cannot be sized.
VISION_ARCHITECTURES = frozenset({
    "Gemma3ForConditionalGeneration", "LlavaForConditionalGeneration", "LlavaNextForConditionalGeneration",
    "LlavaNextVideoForConditionalGeneration", "LlavaOnevisionForConditionalGeneration",
    "Mistral3ForConditionalGeneration", "PaliGemmaForConditionalGeneration", "Qwen2VLForConditionalGeneration",
    "Qwen2_5_VLForConditionalGeneration", "Qwen3VLForConditionalGeneration", "Qwen3VLMoeForConditionalGeneration",
})


@cache
def _registry() -> tuple[tuple[str, ...], frozenset[str]]:
    """(releases, names) from ``data/vllm_architectures.yaml``: the registry's architectures at those releases, and
    the ones an earlier release implemented."""
    text = resources.files("vllm_remedy.vllm").joinpath("data", "vllm_architectures.yaml").read_text(encoding="utf-8")
    data = load_packaged(text)
    names = frozenset(data["architectures"]) | frozenset(data["previously_supported"])
    return tuple(str(r) for r in data["releases"]), names


def registry_releases() -> tuple[str, ...]:
    """The vLLM releases whose model registries ``resolve`` reads."""
    return _registry()[0]


# Name suffixes vLLM swaps to find the model an architecture converts from (``_SUFFIX_TO_DEFAULTS`` in
# vllm/config/model.py@0.19.0, read by the registry's ``_normalize_arch``): "FooForSequenceClassification" runs
# FooForCausalLM as a pooling model.
_SUFFIXES = ("ForCausalLM", "ForConditionalGeneration", "ChatModel", "LMHeadModel", "ForTextEncoding",
             "EmbeddingModel", "ForSequenceClassification", "ForTokenClassification", "ForAudioClassification",
             "ForImageClassification", "ForVideoClassification", "ClassificationModel", "ForRewardModeling",
             "RewardModel", "Model")


def resolve(architecture: str) -> str | None:
    """The registered architecture vLLM runs for this name (itself, or the model it converts from), or None when
    no registry read (``registry_releases``, and the names earlier releases implemented) has either."""
    names = _registry()[1]
    if architecture in names:
        return architecture
    suffix = next((s for s in _SUFFIXES if architecture.endswith(s)), None)
    if suffix is not None:
        for other in _SUFFIXES:
            if architecture.replace(suffix, other) in names:
                return architecture.replace(suffix, other)
    return None


def first_architecture(config: Mapping[str, Any]) -> str | None:
    """The first name of ``architectures``, or None when the config names none."""
    archs = config.get("architectures")
    if isinstance(archs, (list, tuple)) and archs and isinstance(archs[0], str):
        return archs[0]
    return None


def check_family(config: Mapping[str, Any]) -> None:
    """Raise ``cannot predict`` for a family whose memory is not per-token K/V or a name vLLM does not implement.

    vLLM takes the first listed architecture its registry resolves; the check follows the same order."""
    archs = config.get("architectures")
    archs = [a for a in archs if isinstance(a, str)] if isinstance(archs, (list, tuple)) else []
    kind = str(config.get("model_type") or "").lower()
    stateful = ("vLLM runs it with state-space, linear-attention or recurrent layers, whose cache is not per-token "
                "K/V; not modelled")
    if not archs and kind in STATEFUL_MODEL_TYPES:
        raise UserError(f"cannot predict {kind}: {stateful}")
    for arch in archs:
        resolved = resolve(arch)
        if arch in STATEFUL_ARCHITECTURES or resolved in STATEFUL_ARCHITECTURES:
            raise UserError(f"cannot predict {arch}: {stateful}")
        if resolved is not None:
            return
    if archs:
        releases = " or ".join(registry_releases())
        raise UserError(f"cannot predict {archs[0]}: not an architecture vLLM implements (no such name in its model "
                        f"registry at {releases}; vLLM refuses it at start unless its Transformers backend runs it)")


def check_mla(config: Mapping[str, Any]) -> None:
    """Raise ``cannot predict`` for a DeepSeek-V2/V3 config without ``kv_lora_rank``: sizing it as ordinary
    attention would multiply its KV cache by the head count."""
    arch = first_architecture(config)
    if arch in MLA_ARCHITECTURES and not config.get("kv_lora_rank"):
        raise UserError(f"cannot predict {arch}: kv_lora_rank is missing (its MLA latent width)")


def check_vision(config: Mapping[str, Any]) -> None:
    """Raise ``cannot predict`` for a vision-language family whose config has no ``vision_config`` mapping."""
    arch = first_architecture(config)
    if arch in VISION_ARCHITECTURES and not isinstance(config.get("vision_config"), Mapping):
        raise UserError(f"cannot predict {arch}: vision_config is missing (its vision tower's size)")
