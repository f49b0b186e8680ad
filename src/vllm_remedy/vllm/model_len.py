"""vLLM's refusal of a ``--max-model-len`` above the model's own maximum, release by release.

Before it sizes any memory, vLLM's model config derives the longest sequence the checkpoint was built for and
refuses a longer ``--max-model-len`` (a ValueError; from 0.9.1 wrapped in pydantic's ValidationError) unless the
environment sets ``VLLM_ALLOW_LONG_MAX_MODEL_LEN`` to 1 or true, when it only warns. Read from the wheels'
``_get_and_verify_max_len`` (vllm/config.py 0.6.0-0.9.2, vllm/config/__init__.py 0.10.x, vllm/config/model.py
0.11+; the key scan in transformers_utils/model_arch_config_convertor.py from 0.14):

- the smallest of the length keys present (``hf_config.MAX_LEN_KEYS``; ``max_target_positions`` from 0.7.0), then
  config.json's ``model_max_length`` replaces it outright (from 0.8.3; 0.8.2 still took the minimum);
- times the rope factor, except for su/longrope/llama3 (and gemma3 models, from 0.8.0), YaRN starting from its
  ``original_max_position_embeddings``; from 0.28.0 YaRN, deepseek_yarn and deepseek_llama_scaling are no longer
  scaled either (their max_position_embeddings is taken as already scaled; 0.27.0 still scaled YaRN). A rope type
  without a factor scales by 1.0, which makes the number a float ("32768.0"); from 0.12 every RoPE config does
  (rope_theta alone becomes rope parameters), so the message prints a float for nearly every modern model;
- a length up to config.json's ``model_max_length`` is still accepted above that;
- only --disable-sliding-window lowers it to the window, and only pooling models read the tokenizer's
  ``model_max_length`` (from 0.9.2; 0.9.1 capped every model by it, silently): neither is an input here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vllm_remedy.vllm.catalog import ModelSpec
from vllm_remedy.vllm.hf_config import LengthFacts
from vllm_remedy.vllm.versions import NEWEST_RELEASE, parse_version

ENV = "VLLM_ALLOW_LONG_MAX_MODEL_LEN"
INPUT = "allow-long-max-model-len"  # the memory model's own input (``settings.MODEL_INPUTS``)
_UNSCALED = ("su", "longrope", "llama3")
_YARN_KINDS = ("yarn", "deepseek_yarn", "deepseek_llama_scaling")
YARN_UNSCALED_SINCE = (0, 28, 0)
ROPE_ALWAYS_SINCE = (0, 12, 0)  # patch_rope_parameters: rope_theta alone makes rope parameters (factor 1.0)
OVERRIDE_SINCE = (0, 8, 3)  # config.json's model_max_length replaces the keys' minimum (0.8.2 still took the min)
GEMMA3_SINCE = (0, 8, 0)  # gemma3's length is already scaled: no rope factor
_REFERENCE = (0, 11, 0)  # the release whose rule ``hf_config.derived_max_model_len`` (the default length) follows


@dataclass(frozen=True)
class Limit:
    """The model's maximum as this release derives it, with what vLLM names in its message."""

    key: str | None  # the config key vLLM names ("max_position_embeddings")
    derived: int | float  # as vLLM holds it (a float once a rope factor multiplied it)
    model_max_length: int | float | None  # config.json's model_max_length: accepted up to it

    @property
    def tokens(self) -> int:
        """The longest --max-model-len the release accepts without the env var."""
        return int(max(self.derived, self.model_max_length or 0))

    @property
    def derived_text(self) -> str:
        return str(self.derived)


def env_allows(value: str | None) -> bool:
    """vLLM's own reading of the variable (vllm/envs.py): "1" or "true", any case, surrounding blanks ignored."""
    return value is not None and value.strip().lower() in ("1", "true")


def env_inputs(container: Mapping[str, Any]) -> dict[str, str]:
    """The memory-model input a container's literal ``env`` gives (``{}`` when it does not set the variable)."""
    value = None
    for entry in container.get("env") or []:
        if isinstance(entry, Mapping) and entry.get("name") == ENV and "value" in entry:
            value = str(entry["value"])
    return {INPUT: "true"} if env_allows(value) else {}


def limit(model: ModelSpec, version: str | None) -> Limit:
    """The derived maximum of ``model`` on ``version`` (the newest release known when None)."""
    facts = model.length
    # A spec built by hand, or whose length was replaced after it was read: its derived length is all there is.
    if facts is None or int(_derive(facts, _REFERENCE).derived) != model.max_model_len:
        return Limit("max_position_embeddings", model.max_model_len, None)
    return _derive(facts, parse_version(version) or NEWEST_RELEASE)


def _derive(facts: LengthFacts, v: tuple[int, int, int]) -> Limit:
    keys = [(k, n) for k, n in facts.keys if v >= (0, 7, 0) or k != "max_target_positions"]
    key: str | None = None
    derived: int | float = 2048  # vLLM's default when no key is present (it warns and assumes 2048)
    if keys:
        key, derived = min(keys, key=lambda item: item[1])  # first smallest, in scan order
    if facts.model_max_length and v >= OVERRIDE_SINCE:
        key, derived = "model_max_length", facts.model_max_length
    kind = facts.rope_type
    if "gemma3" in facts.model_type and v >= GEMMA3_SINCE:
        return Limit(key, derived, facts.model_max_length)
    multiplies = kind not in _UNSCALED and not (kind in _YARN_KINDS and v >= YARN_UNSCALED_SINCE)
    if multiplies and kind == "yarn" and facts.original:
        derived = facts.original
    factor = (facts.factor if facts.factor is not None else 1.0) if multiplies else 1.0
    # From 0.12 any RoPE config is multiplied (by 1.0 when no factor applies); before, only a rope_scaling that scales.
    applies = facts.has_rope if v >= ROPE_ALWAYS_SINCE else kind is not None and multiplies
    if applies:
        derived = derived * factor
    return Limit(key, derived, facts.model_max_length)


def refused(model: ModelSpec, max_model_len: int | None, version: str | None, allowed: bool) -> Limit | None:
    """The limit vLLM refuses ``max_model_len`` against, or None when it starts (unset, auto, within the
    model's maximum, or the env var set)."""
    if allowed or max_model_len is None or max_model_len <= 0:
        return None
    lim = limit(model, version)
    over = max_model_len > lim.derived
    if over and lim.model_max_length is not None and max_model_len <= lim.model_max_length:
        return None
    return lim if over else None


def detail(lim: Limit, max_model_len: int) -> dict[str, object]:
    """The figures vLLM's message carries, as the log classifier reads them back."""
    return {"max_model_len": max_model_len, "max_len_key": str(lim.key), "derived_max_model_len": lim.derived_text,
            "model_max_length": str(lim.model_max_length)}
