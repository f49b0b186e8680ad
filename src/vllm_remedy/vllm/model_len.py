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
- --disable-sliding-window caps it at the window before the rope factor (vLLM then names ``sliding_window``; every
  release read, 0.5.0-0.29.0; 0.7.1 also did so for gemma2/cohere2 under VLLM_ATTENTION_BACKEND=XFORMERS/FLASHINFER,
  not modelled); 0.5.5-0.6.3 force that cap on Gemma 2 with a window (``gemma2_cap``); only pooling models read
  the tokenizer's ``model_max_length`` (from 0.9.2; 0.9.1 capped every model
  by it, silently), not an input here;
- no length key at all (and no window cap): vLLM takes the user's --max-model-len as it is (the 2048 default
  applies only when none is given), so nothing is refused;
- the env var arrived in 0.5.4 (vllm/envs.py@0.5.4; 0.5.0-0.5.3 refuse unconditionally).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any, Protocol

from vllm_remedy.vllm import gemma2_cap, pod_env
from vllm_remedy.vllm.catalog import ModelSpec
from vllm_remedy.vllm.hf_config import LengthFacts
from vllm_remedy.vllm.pod_env import ConfigMaps
from vllm_remedy.vllm.versions import NEWEST_RELEASE, parse_version


class EngineSettings(Protocol):
    """What the length check reads of ``memory.settings.EngineSettings`` (a protocol: the memory model imports this
    module, so importing it back would make a circle)."""

    max_model_len: int | None
    version: str | None
    allow_long_max_model_len: bool
    disable_sliding_window: bool


ENV = "VLLM_ALLOW_LONG_MAX_MODEL_LEN"
INPUT = "allow-long-max-model-len"  # the memory model's own input (``settings.MODEL_INPUTS``)
_UNSCALED = ("su", "longrope", "llama3")
_YARN_KINDS = ("yarn", "deepseek_yarn", "deepseek_llama_scaling")
YARN_UNSCALED_SINCE = (0, 28, 0)
ROPE_ALWAYS_SINCE = (0, 12, 0)  # patch_rope_parameters: rope_theta alone makes rope parameters (factor 1.0)
OVERRIDE_SINCE = (0, 8, 3)  # config.json's model_max_length replaces the keys' minimum (0.8.2 still took the min)
ENV_SINCE = (0, 5, 4)  # VLLM_ALLOW_LONG_MAX_MODEL_LEN: absent from vllm/envs.py@0.5.3, read by config.py@0.5.4
GEMMA3_SINCE = (0, 8, 0)  # gemma3's length is already scaled: no rope factor
_REFERENCE = (0, 11, 0)  # the release whose rule ``hf_config.derived_max_model_len`` (the default length) follows


@dataclass(frozen=True)
class Limit:
    """The model's maximum as this release derives it, with what vLLM names in its message."""

    key: str | None  # the config key vLLM names ("max_position_embeddings"); None: config.json has none
    derived: int | float  # as vLLM holds it (a float once a rope factor multiplied it)
    model_max_length: int | float | None  # config.json's model_max_length: accepted up to it

    @property
    def unbounded(self) -> bool:
        """No length key and no window cap: vLLM takes any --max-model-len as given (the 2048 is only a default)."""
        return self.key is None

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


def env_read(version: str | None) -> bool:
    """Whether ``version`` reads VLLM_ALLOW_LONG_MAX_MODEL_LEN at all (unknown versions: the newest rules)."""
    return (parse_version(version) or NEWEST_RELEASE) >= ENV_SINCE


def env_inputs(container: Mapping[str, Any], maps: ConfigMaps | None = None) -> dict[str, str]:
    """The memory-model input the variable's value in vLLM's process gives (``pod_env.read``: the pod's env, the
    ConfigMaps among ``maps``, the launch command); ``{}`` when unset, off or unreadable (``unknown`` says which)."""
    got = pod_env.read(container, ENV, maps)
    return {INPUT: "true"} if got.unknown is None and env_allows(got.value) else {}


def unknown(model: ModelSpec, container: Mapping[str, Any], settings: EngineSettings,
            maps: ConfigMaps | None = None) -> str | None:
    """Why the start cannot be judged: the length is above the model's maximum and the variable that would allow it
    cannot be read (a Secret, a ConfigMap outside the manifests, a script that may set it). None otherwise."""
    got = pod_env.read(container, ENV, maps)
    if got.unknown is None or not env_read(settings.version):
        return None
    lim = refused(model, settings.max_model_len, settings.version, False, settings.disable_sliding_window)
    if lim is None:
        return None
    return (f"whether vLLM refuses --max-model-len {settings.max_model_len:,} above the model's {lim.tokens:,} "
            f"({lim.key}) depends on {ENV}, which cannot be read: {got.unknown}")


def limit(model: ModelSpec, version: str | None, disable_sliding_window: bool = False) -> Limit:
    """The derived maximum of ``model`` on ``version`` (the newest release known when None); with
    ``disable_sliding_window`` capped at the model's window as vLLM caps it."""
    facts = model.length
    v = parse_version(version) or NEWEST_RELEASE
    window = model.sliding_window if disable_sliding_window or gemma2_cap.forced(model, v) else None
    # A spec built by hand, or whose length was replaced after it was read: its derived length is all there is.
    if facts is None or int(_derive(facts, _REFERENCE).derived) != model.max_model_len:
        if window is not None and window < model.max_model_len:
            return Limit("sliding_window", window, None)
        return Limit("max_position_embeddings", model.max_model_len, None)
    return _derive(facts, v, window)


@cache  # pure, on small frozen inputs: the planner asks it twice per estimate, thousands of times a plan
def _derive(facts: LengthFacts, v: tuple[int, int, int], window: int | None = None) -> Limit:
    keys = [(k, n) for k, n in facts.keys if v >= (0, 7, 0) or k != "max_target_positions"]
    key: str | None = None
    derived: int | float = 2048  # shown only: with no key vLLM takes the user's length (``Limit.unbounded``)
    if keys:
        key, derived = min(keys, key=lambda item: item[1])  # first smallest, in scan order
    if facts.model_max_length and v >= OVERRIDE_SINCE:
        key, derived = "model_max_length", facts.model_max_length
    if window is not None and (key is None or window < derived):  # before the rope factor, as vLLM does
        key, derived = "sliding_window", window
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


def refused(model: ModelSpec, max_model_len: int | None, version: str | None, allowed: bool,
            disable_sliding_window: bool = False) -> Limit | None:
    """The limit vLLM refuses ``max_model_len`` against, or None when it starts (unset, auto, within the
    model's maximum, no length key to compare with, or the env var set on a release that reads it)."""
    if (allowed and env_read(version)) or max_model_len is None or max_model_len <= 0:
        return None
    lim = limit(model, version, disable_sliding_window)
    if lim.unbounded:
        return None
    over = max_model_len > lim.derived
    if over and lim.model_max_length is not None and max_model_len <= lim.model_max_length:
        return None
    return lim if over else None


def cap(model: ModelSpec, version: str | None, allowed: bool, disable_sliding_window: bool = False) -> int | None:
    """The longest --max-model-len vLLM's model config accepts, None when nothing caps it: the env var set on a
    release that reads it, or a config.json with no length key (vLLM then takes the user's value)."""
    if allowed and env_read(version):
        return None
    lim = limit(model, version, disable_sliding_window)
    return None if lim.unbounded else lim.tokens


def refusal(model: ModelSpec, settings: EngineSettings) -> str | None:
    """The refusal in words, naming the maximum and the env var (None when vLLM does not refuse)."""
    asked = settings.max_model_len
    lim = refused(model, asked, settings.version, settings.allow_long_max_model_len, settings.disable_sliding_window)
    if lim is None or asked is None:
        return None
    env = (f"or set {ENV}=1 in the container's env for a model known to take more" if env_read(settings.version)
           else f"vLLM {settings.version} predates {ENV}, so nothing else lets it start")
    derived = int(lim.derived) if float(lim.derived).is_integer() else lim.derived  # our words: 131072, not 131072.0
    return (f"--max-model-len {asked:,} is above the model's {lim.tokens:,} ({lim.key}={derived}); set it "
            f"at most {lim.tokens:,}, {env}")


def detail(lim: Limit, max_model_len: int) -> dict[str, object]:
    """The figures vLLM's message carries, as the log classifier reads them back."""
    return {"max_model_len": max_model_len, "max_len_key": str(lim.key), "derived_max_model_len": lim.derived_text,
            "model_max_length": str(lim.model_max_length)}
