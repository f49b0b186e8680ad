"""The rehearsal pod's own reading of ``--hf-config-path`` and ``--hf-overrides``, as vLLM's ``ModelConfig`` does it:
the config comes from ``--hf-config-path`` when given (``get_config(self.hf_config_path or self.model, ...)``), and
the overrides JSON is applied to it before anything is derived (flat keys replace, a dict merges into the nested
config it names from 0.12.0). vLLM applies every key, read or not, so the pod does too: keys that change nothing in
the memory model change nothing here. Text argparse refuses ends the process (exit 2); a config the world does not
ship for a path in the pod fails as vLLM's missing config does (``launch``).

Dotted ``--hf-overrides.KEY VALUE`` (FlexibleArgumentParser.parse_args, utils.py@0.9.0, utils/__init__.py@0.9.2,
utils/argparse_utils.py@0.20.0): from 0.9.0 the keys are folded into one dict appended after every argument, so it
replaces a plain JSON value; 0.9.0 respells the key with dashes and keeps the text, 0.9.2 on JSON-decodes the value
(``KEY+ a,b`` a list), 0.20.0 on reads a non-JSON value as ``human_readable_int`` first. Before 0.9.0 argparse
refuses the option as unknown, which this module does not judge (the pod's parser, ``argv``, does not either).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from vllm_remedy.errors import UserError
from vllm_remedy.vllm import hf_overrides
from vllm_remedy.vllm.catalog import ModelSpec


def config_id(flags: Mapping[str, str], model_id: str) -> str:
    """Where the pod reads its config from: ``--hf-config-path`` when its argv has one, else the model."""
    return str(flags.get("hf-config-path") or "").strip() or model_id


_HUMAN = re.compile(r"(\d+(?:\.\d+)?)([kKmMgGtT])")


def _dotted_value(text: str, version: tuple[int, int, int]) -> Any:
    """A dotted key's value as the release's parser reads it: text (0.9.0), JSON, ``human_readable_int`` (0.20.0+)."""
    if version < (0, 9, 2):
        return text
    try:
        return json.loads(text)
    except ValueError:
        pass
    match = _HUMAN.fullmatch(text.strip())
    if version >= (0, 20, 0) and match and (match.group(2).islower() or match.group(1).isdigit()):
        unit = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}.get(match.group(2)) or \
            2 ** (10 * " KMGT".index(match.group(2)))
        return int(float(match.group(1)) * unit)
    if version >= (0, 20, 0) and not match:
        try:
            return int(text.strip())  # human_readable_int's last step, as it writes it
        except ValueError:
            pass
    return text


def _update(original: dict[str, Any], update: Mapping[str, Any]) -> None:
    """vLLM's ``recursive_dict_update``: dicts merge, lists concatenate, anything else replaces."""
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(original.get(key), dict):
            _update(original[key], value)
        elif isinstance(value, list) and isinstance(original.get(key), list):
            original[key] += value
        else:
            original[key] = value


def _received(flags: Mapping[str, str], version: tuple[int, int, int]) -> str | None:
    """``--hf-overrides`` as argparse receives it: the dotted keys' dict (0.9.0+) over any plain value."""
    dotted = [(k.split(".", 1)[1], str(v)) for k, v in flags.items() if k.startswith("hf-overrides.")]
    if not dotted or version < (0, 9, 0):
        return flags.get("hf-overrides")
    folded: dict[str, Any] = {}
    for path, text in dotted:
        value: Any
        if version < (0, 9, 2):
            path, value = path.replace("_", "-"), text
        elif path.endswith("+"):
            path, value = path[:-1], text.split(",")
        else:
            value = _dotted_value(text, version)
        for key in reversed(path.split(".")):
            value = {key: value}
        _update(folded, value)
    return json.dumps(folded)


def overridden(spec: ModelSpec, config_from: str, revision: str | None, flags: Mapping[str, str],
               version: tuple[int, int, int]) -> ModelSpec:
    """``spec`` under the argv's ``--hf-overrides`` (unchanged without it, or when the world gave the pod no config
    to apply it to); a UserError with vLLM's words when the release's parser or config refuses the value."""
    text = _received(flags, version)
    if text is None or version < hf_overrides.SINCE:
        return spec
    if (refused := hf_overrides.argparse_refusal(str(text), version)) is not None:
        raise UserError(refused)
    try:
        overrides: Any = json.loads(str(text))
    except ValueError:
        overrides = str(text)  # union_dict_and_str keeps non-brace text as a string
    if not isinstance(overrides, dict):
        raise UserError(f"ValueError: hf_overrides must be a dict or a callable, not {type(overrides).__name__}")
    base = hf_overrides.base_config(config_from, revision)
    if base is None or not overrides:
        return spec
    config, reviewed = base
    return hf_overrides.rebuilt(spec, config_from, config, hf_overrides.merged(config, overrides, version), reviewed)
