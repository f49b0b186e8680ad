"""How each vLLM release applies a ``--hf-overrides`` dict to the config it loaded: what the length and shapes read.

Read in each wheel (``ModelConfig.__post_init__`` and ``get_config``):

* 0.6.4: the dict is ``AutoConfig.from_pretrained``'s kwargs (``get_config(..., **hf_overrides_kw)``, config.py@0.6.4),
  set on the loaded config only where the config class holds the key (``from_dict``, configuration_utils.py@4.46.3;
  another is dropped: a key config.json lacks may be either, "cannot predict"), then ``patch_rope_scaling`` runs
  (transformers_utils/config.py@0.6.4);
* 0.6.5-0.9.x: ``hf_config.update(hf_overrides_kw)`` after ``get_config`` returned, i.e. after the RoPE patch
  (config.py@0.6.5, @0.8.5, @0.9.2): a ``rope_scaling`` without ``rope_type`` is read as ``rope_scaling["rope_type"]``
  by ``_get_and_verify_max_len``: KeyError;
* 0.10.0-0.11.x: ``config.update(hf_overrides_kw)`` inside ``get_config``, before ``patch_rope_scaling``
  (transformers_utils/config.py@0.10.1, @0.11.0): ``type`` becomes ``rope_type``; neither is "rope_scaling should have
  a 'rope_type' key" (ValueError, ``config_bounds.rope``). In all three, ``update`` is ``setattr`` per key: a dict
  value replaces the whole;
* from 0.12.0 dict values are kept apart and applied after ``get_config`` (``_apply_dict_overrides``,
  config/model.py@0.12.0, the same through @0.34.0): a key whose attribute is a ``PretrainedConfig`` (a sub-config)
  is merged key by key (``_update_nested``, recursing into nested dicts and configs); any other key (a plain dict such
  as ``rope_scaling`` or ``quantization_config``) is replaced by ``setattr``, after the RoPE patch. The length reads
  ``rope_parameters`` (``_get_and_verify_max_len``, config/model.py@0.12.0, @0.34.0), so what a RoPE dict does depends
  on transformers' major version:

  - transformers 4 (vLLM requires ``<5`` in 0.12.0-0.19.0, the wheels' METADATA): ``patch_rope_parameters`` makes
    ``rope_parameters`` the checkpoint's own ``rope_scaling`` dict object (transformers_utils/config.py@0.12.0,
    @0.19.0), so a top-level ``rope_scaling`` set afterwards is an attribute the length never reads, while one merged
    inside a sub-config mutates that very dict;
  - transformers 5 (vLLM requires ``>=5.5.3`` from 0.24.0): ``rope_scaling`` is a property of ``PreTrainedConfig``
    reading and setting ``rope_parameters`` (configuration_utils.py@5.5.3, @5.10.4), so the dict replaces the
    parameters the length reads, unpatched: without ``rope_type``, KeyError;
  - 0.20.0-0.23.x take either (``>=4.56.0`` but not 5.0-5.5.0): which one the image holds decides, not known here.

A nested dict is a sub-config when config.json holds it under a name the tools read as a model's part
(``text_config``, ``llm_config``, ``language_config``, ``vision_config``, ``audio_config``) or when it carries a
``model_type`` (``PretrainedConfig.to_dict`` writes one for every sub-config, configuration_utils.py@4.57.1); a plain
dict (``rope_scaling``, ``quantization_config``) has neither.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from vllm_remedy.errors import UserError

Version = tuple[int, int, int]
Path = tuple[str, ...]
#: ``setattr`` after ``get_config``, past the RoPE patch (config.py@0.6.5; inside get_config again in @0.10.0).
POST_PATCH: tuple[Version, Version] = ((0, 6, 5), (0, 10, 0))
#: Dict values kept apart and applied by ``_apply_dict_overrides`` (config/model.py@0.12.0; not in @0.11.0).
DICT_APART_SINCE: Version = (0, 12, 0)
#: vLLM's transformers requirement allows 5.x (METADATA@0.20.0; ``<5`` in @0.19.0) and requires it (@0.24.0).
EITHER_MAJOR_SINCE: Version = (0, 20, 0)
TRANSFORMERS_5_SINCE: Version = (0, 24, 0)
SUB_CONFIG_KEYS = ("text_config", "llm_config", "language_config", "vision_config", "audio_config")
ROPE_KEYS = ("rope_scaling", "rope_parameters")
#: ``ALLOWED_LAYER_TYPES``: per-layer-type rope dicts (is_rope_parameters_nested, transformers_utils/config.py@0.19.0).
_LAYER_TYPES = frozenset({"full_attention", "sliding_attention", "chunked_attention", "linear_attention"})


@dataclass
class Applied:
    """The config as the release sizes it, the key paths the override sets (as the release sets them) and those of
    them set on an attribute nothing vLLM sizes reads (``inert``: the tools need not read them either)."""

    config: dict[str, Any]
    paths: list[Path] = field(default_factory=list)
    inert: list[Path] = field(default_factory=list)


def transformers_major(version: Version) -> int | None:
    """The transformers major the release runs with: 4 up to 0.19, 5 from 0.24, None where it takes either."""
    if version < EITHER_MAJOR_SINCE:
        return 4
    return 5 if version >= TRANSFORMERS_5_SINCE else None


def sub_config(key: str, value: Any) -> bool:
    """Whether config.json's ``value`` under ``key`` is loaded as a ``PretrainedConfig`` (see the module's words)."""
    return isinstance(value, Mapping) and (key in SUB_CONFIG_KEYS or "model_type" in value)


def apply(config: Mapping[str, Any], overrides: Mapping[str, Any], version: Version) -> Applied:
    """``config`` with ``overrides`` applied as release ``version`` applies them; a UserError in vLLM's words where
    the release itself fails on the value, or "cannot predict" where the outcome is not known here."""
    got = Applied(copy.deepcopy(dict(config)))
    for key, value in overrides.items():
        if version >= DICT_APART_SINCE and isinstance(value, Mapping):
            if sub_config(key, got.config.get(key)):
                _nested(got, got.config[key], value, version, (key,))
            else:
                _plain(got, got.config, key, value, version, (key,))
            continue
        if version < POST_PATCH[0] and key not in got.config:
            raise UserError(f"--hf-overrides {key}: vLLM {_label(version)} passes the dict as "
                            "AutoConfig kwargs, which set only a key the config class holds (from_dict, "
                            "configuration_utils.py@4.46.3) and drop any other; config.json does not hold it")
        got.config[key] = copy.deepcopy(value)
        got.paths.append((key,))
        if key == "rope_scaling" and isinstance(value, Mapping) and version < DICT_APART_SINCE:
            _pre_patch_rope(value, version)
    return got


def _pre_patch_rope(value: Mapping[str, Any], version: Version) -> None:
    """A replaced ``rope_scaling`` before 0.12 set past the patch (0.6.5-0.9.x) is read as it is: ``type`` alone is
    not ``rope_type``. (Where the patch runs after it, one with neither key is ``config_bounds.rope``'s refusal.)"""
    if "rope_type" not in value and POST_PATCH[0] <= version < POST_PATCH[1]:
        raise UserError(f"--hf-overrides rope_scaling has no rope_type: vLLM {_label(version)} sets it after its "
                        "RoPE patch and reads rope_scaling['rope_type'] (KeyError: 'rope_type')")


def _label(version: Version) -> str:
    return ".".join(map(str, version))


def _read_unpatched(value: Mapping[str, Any], key: str, version: Version) -> None:
    """The length reads ``rp["rope_type"]`` of a dict set after the patch (config/model.py@0.12.0, @0.34.0)."""
    dicts = list(value.values()) if value and set(value) <= _LAYER_TYPES else [value]
    if any(isinstance(d, Mapping) and "rope_type" not in d for d in dicts):
        raise UserError(f"--hf-overrides {key} has no rope_type: vLLM {_label(version)} sets it after its RoPE patch "
                        "and reads rope_parameters['rope_type'] when deriving the length (KeyError: 'rope_type')")


def _either(key: str, version: Version) -> UserError:
    return UserError(f"--hf-overrides {key}: vLLM {_label(version)} runs with transformers 4.56+ or 5.5.1+ and sets "
                     "the dict after its RoPE patch; with 4 the length keeps the checkpoint's RoPE, with 5 it reads "
                     "this dict: which one the image holds is not known here")


def _plain(got: Applied, target: dict[str, Any], key: str, value: Mapping[str, Any], version: Version,
           path: Path) -> None:
    """``setattr`` of a dict on a top-level attribute that is not a sub-config (0.12.0+): replaced, past the patch.
    The tools keep the RoPE dict the length reads under ``rope_scaling``."""
    if key not in ROPE_KEYS:
        target[key] = copy.deepcopy(dict(value))
        got.paths.append(path)
        return
    got.paths.append((*path[:-1], "rope_scaling"))  # where the tools keep it
    major = transformers_major(version)
    if key == "rope_scaling" and major is None:
        raise _either(key, version)
    if key == "rope_scaling" and major == 4:  # rope_parameters stays the checkpoint's dict: the length ignores it
        got.inert.append(path)
        return
    _read_unpatched(value, key, version)  # rope_parameters (either major), or rope_scaling's property (5)
    target.pop("rope_parameters", None)
    target["rope_scaling"] = copy.deepcopy(dict(value))


def _nested(got: Applied, target: dict[str, Any], updates: Mapping[str, Any], version: Version,
            path: Path) -> None:
    """``_update_nested``: a dict value merges into a dict or config already there, anything else is set."""
    for key, value in updates.items():
        here = (*path, key)
        if isinstance(value, Mapping) and key in ROPE_KEYS:
            _nested_rope(got, target, key, value, version, here)
        elif isinstance(value, Mapping) and isinstance(target.get(key), Mapping):
            _nested(got, target[key], value, version, here)
        else:
            target[key] = copy.deepcopy(value)
            got.paths.append(here)


def _nested_rope(got: Applied, target: dict[str, Any], key: str, value: Mapping[str, Any], version: Version,
                 path: Path) -> None:
    """A RoPE dict inside a sub-config: merged into the dict the length reads when the attribute holds it."""
    major = transformers_major(version)
    if major is None:
        raise _either(".".join(path), version)
    held = target.get("rope_scaling") if isinstance(target.get("rope_scaling"), Mapping) else None
    params = target.get("rope_parameters") if isinstance(target.get("rope_parameters"), Mapping) else None
    base = held if (major == 4 and key == "rope_scaling") else (held or params)
    if base is None and major == 4 and key == "rope_scaling":  # None: setattr on an attribute the length skips
        got.paths.append(path)
        got.inert.append(path)
        return
    if base is None and "rope_theta" in target:
        raise UserError(f"--hf-overrides {'.'.join(path)} merges into the rope_parameters vLLM "
                        f"{_label(version)} builds from rope_theta, which this tool does not model")
    merged = copy.deepcopy(dict(base or {}))
    sub = Applied(merged)
    _nested(sub, merged, value, version, (*path[:-1], "rope_scaling"))  # where the tools keep it
    got.paths += sub.paths
    if base is None:
        _read_unpatched(merged, ".".join(path), version)
    target.pop("rope_parameters", None)
    target["rope_scaling"] = merged
