"""A text-only config that carries a ``text_config`` object, and vLLM's refusal of it, release by release.

Why: a text export of a multimodal fine-tune can leave the composite's ``text_config`` behind. A text class
(LlamaConfig, ...) keeps it as a plain attribute; vLLM's ``get_hf_text_config`` then takes it as the language model's
config and refuses it, so sizing the model from it (a different, often far smaller model) was a silent wrong number.
``llm_config`` / ``language_config`` on such a class are read by neither transformers' ``get_text_config`` nor vLLM:
the top-level keys are the model. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Text-only config classes (transformers' model_type), whose ``__init__`` keeps an unknown key as a plain attribute:
# the ones ``vllm.config_defaults`` reads, less the composites and sub-configs (Qwen2-VL's, the vision towers').
_TEXT_ONLY_TYPES = frozenset({
    "llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "phi3", "phi", "gemma", "gemma2",
    "granite", "opt", "seed_oss", "gemma3_text", "phimoe", "granitemoe", "deepseek_v2", "deepseek_v3", "gpt_oss",
    "olmo", "olmo2", "glm", "glm4", "cohere", "cohere2"})
# vLLM's own words when ``get_hf_text_config`` meets such a key: transformers' ``get_text_config`` returns an attribute
# named text_config that is not None (configuration_utils.py@4.57.1), here a dict, and vLLM then checks it for
# ``num_attention_heads``: a bare ``assert hasattr(config.text_config, "num_attention_heads")``
# (transformers_utils/config.py@0.5.5, @0.6.3, @0.7.3, @0.8.3; ``assert hasattr(text_config, ...)`` after
# ``config.get_text_config()`` @0.8.5-@0.13.0), from 0.14.0 a ValueError (@0.14.0, @0.20.0, @0.30.0 l.1144, @0.34.0).
STRAY_TEXT_VALUE_ERROR_SINCE = (0, 14, 0)
STRAY_TEXT_GET_TEXT_CONFIG_SINCE = (0, 8, 5)
STRAY_TEXT_VALUE_ERROR = ("ValueError: The text_config extracted from the model config does not have "
                          "`num_attention_heads` attribute. This indicates a mismatch between the model config and "
                          "vLLM's expectations. Please ensure that the model config is compatible with vLLM.")


def text_only(config: Mapping[str, Any]) -> bool:
    """Whether the config's stated model_type is a text-only class. A config stating none is not judged: transformers
    refuses a real one ("Unrecognized model", ``config_defaults``), so it is a catalog entry's or a test's shorthand."""
    return config.get("model_type") in _TEXT_ONLY_TYPES


def stray(config: Mapping[str, Any]) -> bool:
    """A text-only class with a ``text_config`` object (a text export of a multimodal fine-tune can leave one): vLLM
    refuses the config (``refusal``); ``llm_config`` / ``language_config`` there are read by no one."""
    return text_only(config) and isinstance(config.get("text_config"), Mapping)


def refusal(version: tuple[int, int, int]) -> str:
    """vLLM's exception for ``stray``, as the release words it."""
    if version >= STRAY_TEXT_VALUE_ERROR_SINCE:
        return STRAY_TEXT_VALUE_ERROR
    tested = "text_config" if version >= STRAY_TEXT_GET_TEXT_CONFIG_SINCE else "config.text_config"
    return f'AssertionError (assert hasattr({tested}, "num_attention_heads"))'
