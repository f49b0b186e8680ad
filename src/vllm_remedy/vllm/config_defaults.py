"""The values transformers' config classes give the keys a config.json leaves out, applied before anything is sized.

vLLM never reads config.json as a plain dict: ``get_config`` loads it through the transformers class its
``model_type`` names (``AutoConfig.from_pretrained``), whose ``__init__`` fills every absent key with the class
default, and every size vLLM derives (KV heads, layers, the max length, the expert count) reads that filled object.
So a hand-trimmed Llama config without ``max_position_embeddings`` is a 2,048-token model to vLLM (LlamaConfig), a
Mixtral without ``num_local_experts`` has 8 experts (MixtralConfig) and a Qwen3-MoE without ``num_experts`` 128
(Qwen3MoeConfig). Sizing the dict as written instead gave a guess (no length cap, no experts, the dense width).

The table (data/transformers_defaults.json) is read from ``models/<type>/configuration_<type>.py`` in the transformers
wheels 4.46.3, 4.57.1, 5.5.3 and 5.10.4 (which versions each entry was read in: its ``read``). vLLM's wheels bound
transformers without fixing it (their METADATA, as ``hf_merge`` read it: major 4 up to 0.19.0, 4.56+ or 5.5.1+ on
0.20-0.23, >= 5.5.3 from 0.24.0; the image installs whatever satisfied that when it was built), so a default is
applied only where every wheel read agrees; where they differ (``differs``: Gemma2Config moved its defaults from
gemma-2-7b's shape to gemma-2-2b's between 4.46.3 and 4.57.1) a missing key is ``cannot predict <arch>: <key>
missing``, never one of the two. Transformers older than 4.46.3 (a 0.5.x / 0.6.x image may hold one) were not read.
A default of None that the class derives later (``num_key_value_heads`` = the attention heads, ``head_dim`` =
hidden / heads) is left out: ``hf_config`` derives it the same way.

A config.json without ``model_type`` is refused by transformers itself (``AutoConfig``: "Unrecognized model"); the
catalog's abbreviated entries and hand-trimmed configs name the architecture instead, so the class is taken from the
model class it names (``LlamaForCausalLM`` -> LlamaConfig), the config class that model's vLLM implementation reads.
The table is the one place class defaults live: the text classes (Gemma 3's text model, whose defaults
google/gemma-3-27b-it relies on for vocab_size and max_position_embeddings, and the ``tie_word_embeddings`` default
of every class that sets one) and the vision classes a ``vision_config`` is built with (``vision_defaults``).
A type the table does not hold gets no defaults: whatever it leaves out and the model needs is ``cannot predict``.
``derived`` holds what a class computes in ``__init__`` from an absent key (Gemma 3's sliding_window_pattern 6);
``withheld`` what was read but is not applied (DeepSeek-V2/V3: absent from 4.46.3, where the checkpoint's own
remote code builds the config, so only their tie_word_embeddings is).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import lru_cache
from importlib import resources
from typing import Any

from vllm_remedy.errors import UserError
from vllm_remedy.vllm import architectures

# The model class a config names -> the model_type whose config class builds it (transformers' modeling files:
# ``LlamaForCausalLM`` is ``LlamaPreTrainedModel``'s, whose ``config_class`` is LlamaConfig), for configs without
# ``model_type``.
_TYPE_OF_ARCHITECTURE = {
    "LlamaForCausalLM": "llama", "MistralForCausalLM": "mistral", "MixtralForCausalLM": "mixtral",
    "Qwen2ForCausalLM": "qwen2", "Qwen2MoeForCausalLM": "qwen2_moe", "Qwen3ForCausalLM": "qwen3",
    "Qwen3MoeForCausalLM": "qwen3_moe", "Phi3ForCausalLM": "phi3", "PhiForCausalLM": "phi",
    "GemmaForCausalLM": "gemma", "Gemma2ForCausalLM": "gemma2", "GraniteForCausalLM": "granite",
    "OPTForCausalLM": "opt", "SeedOssForCausalLM": "seed_oss", "Gemma3ForCausalLM": "gemma3_text",
    "PhiMoEForCausalLM": "phimoe", "GraniteMoeForCausalLM": "granitemoe", "DeepseekV2ForCausalLM": "deepseek_v2",
    "DeepseekV3ForCausalLM": "deepseek_v3", "GptOssForCausalLM": "gpt_oss", "OlmoForCausalLM": "olmo",
    "Olmo2ForCausalLM": "olmo2", "GlmForCausalLM": "glm", "Glm4ForCausalLM": "glm4", "CohereForCausalLM": "cohere",
    "Cohere2ForCausalLM": "cohere2",
}
# The vision class a composite config builds its ``vision_config`` with, by the composite's model_type. Fixed
# classes: Gemma3Config -> SiglipVisionConfig, MllamaConfig -> MllamaVisionConfig, Qwen2VLConfig ->
# Qwen2VLVisionConfig, Qwen2_5_VLConfig -> Qwen2_5_VLVisionConfig (their ``sub_configs`` / ``__init__`` in 4.46.3 where
# the class exists, 4.57.1, 5.10.4). The Llava family and PaliGemma build ``CONFIG_MAPPING[vision_config.get(
# "model_type", <default>)]``: the stated model_type decides, else the default named here (llava*: clip_vision_model;
# llava_onevision, paligemma: siglip_vision_model; mistral3: pixtral, not in the table).
_FIXED_VISION = {"gemma3": "siglip_vision_model", "mllama": "mllama_vision_model", "qwen2_vl": "qwen2_vl_vision",
                 "qwen2_5_vl": "qwen2_5_vl_vision"}
_DEFAULT_VISION = {"llava": "clip_vision_model", "llava_next": "clip_vision_model",
                   "llava_next_video": "clip_vision_model", "llava_onevision": "siglip_vision_model",
                   "paligemma": "siglip_vision_model", "mistral3": "pixtral"}
# The same for ``text_config``: Gemma3Config -> Gemma3TextConfig, Qwen2-VL / Qwen2.5-VL -> their text classes, Mllama
# -> MllamaTextConfig (not in the table) fixed; Llava* / PaliGemma / Mistral3 / LlavaOnevision build
# ``CONFIG_MAPPING[text_config.get("model_type", <default>)]`` (llama, gemma, mistral, qwen2; 4.46.3, 4.57.1, 5.10.4).
_FIXED_TEXT = {"gemma3": "gemma3_text", "mllama": "mllama_text_model", "qwen2_vl": "qwen2_vl_text",
               "qwen2_5_vl": "qwen2_5_vl_text"}
_DEFAULT_TEXT = {"llava": "llama", "llava_next": "llama", "llava_next_video": "llama", "llava_onevision": "qwen2",
                 "paligemma": "gemma", "mistral3": "mistral"}
# The composite model class a config names -> its model_type, for a config without ``model_type``.
_COMPOSITE_OF_ARCHITECTURE = {
    "Gemma3ForConditionalGeneration": "gemma3", "MllamaForConditionalGeneration": "mllama",
    "Qwen2VLForConditionalGeneration": "qwen2_vl", "Qwen2_5_VLForConditionalGeneration": "qwen2_5_vl",
    "LlavaForConditionalGeneration": "llava", "LlavaNextForConditionalGeneration": "llava_next",
    "LlavaNextVideoForConditionalGeneration": "llava_next_video",
    "LlavaOnevisionForConditionalGeneration": "llava_onevision", "PaliGemmaForConditionalGeneration": "paligemma",
    "Mistral3ForConditionalGeneration": "mistral3",
}


@lru_cache(maxsize=1)
def table() -> dict[str, dict[str, Any]]:
    """data/transformers_defaults.json: per model_type, ``defaults`` (the same in every wheel read) and ``differs``."""
    text = resources.files("vllm_remedy.vllm").joinpath("data", "transformers_defaults.json").read_text("utf-8")
    return {k: v for k, v in json.loads(text).items() if not k.startswith("_")}


def config_type(config: Mapping[str, Any]) -> str | None:
    """The model_type whose class vLLM's transformers builds this config with, or None: not in the table."""
    kind = config.get("model_type")
    if isinstance(kind, str) and kind:
        return kind if kind in table() else None
    archs = config.get("architectures")
    first = archs[0] if isinstance(archs, list) and archs and isinstance(archs[0], str) else None
    return _TYPE_OF_ARCHITECTURE.get(first) if first else None


def class_defaults(config: Mapping[str, Any], parent: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The class defaults for the keys ``config`` omits (an empty dict for a type not in the table); ``parent``: the
    composite config whose ``text_config`` this is (its class picks the text class). A key whose default differs
    between the transformers versions read, and that the config leaves out, raises ``cannot predict``: which
    transformers the image carries is not an input."""
    kind = config_type(config) if parent is None else _sub_type(parent, config, _FIXED_TEXT, _DEFAULT_TEXT)
    if kind is None or kind not in table():
        return {}
    # The class a composite picks carries its own model_type (a class attribute), which vLLM's rules read
    # (Gemma 3's unscaled length): a text_config that names none has the class's.
    named = {"model_type": kind} if parent is not None and not config.get("model_type") else {}
    return {**_fill(config, kind), **named}


def _parent_type(config: Mapping[str, Any]) -> str | None:
    kind = config.get("model_type")
    if isinstance(kind, str) and kind:
        return kind
    return _COMPOSITE_OF_ARCHITECTURE.get(architectures.first_architecture(config) or "")


def _sub_type(parent: Mapping[str, Any], sub: Mapping[str, Any], fixed: Mapping[str, str],
              default: Mapping[str, str]) -> str | None:
    """The class a composite builds a sub-config with: fixed by the composite, else the sub-config's own model_type,
    else the composite's default for it."""
    kind = _parent_type(parent)
    if kind in fixed:
        return fixed[kind]
    stated = sub.get("model_type")
    if isinstance(stated, str) and stated:
        return stated
    return default.get(str(kind))


def _fill(config: Mapping[str, Any], kind: str) -> dict[str, Any]:
    """``kind``'s defaults and derived values for the keys ``config`` omits; a ``differs`` key it omits raises."""
    entry = table()[kind]
    for key, per_version in sorted(entry.get("differs", {}).items()):
        if key not in config:
            seen = ", ".join(f"{value} in {version}" for version, value in per_version.items())
            name = architectures.first_architecture(config) or kind
            raise UserError(f"cannot predict {name}: {key} missing (transformers' {entry['class']} default differs "
                            f"between versions: {seen}; which transformers the vLLM image has is not an input)")
    filled = {**entry["defaults"], **entry.get("derived", {})}
    return {k: v for k, v in filled.items() if k not in config}


def vision_type(config: Mapping[str, Any], vision: Mapping[str, Any]) -> str | None:
    """The table key of the class transformers builds ``config``'s ``vision_config`` with, or None: not in the table
    (or not known), so no key ``vision`` omits is filled."""
    found = _sub_type(config, vision, _FIXED_VISION, _DEFAULT_VISION)
    return found if found in table() and found.endswith(("_vision_model", "_vision")) else None


def vision_defaults(config: Mapping[str, Any]) -> dict[str, Any]:
    """``config``'s ``vision_config`` (a mapping) with its vision class's defaults under the keys it omits."""
    vision = config["vision_config"]
    kind = vision_type(config, vision)
    return {**(_fill(vision, kind) if kind else {}), **vision}
