"""The rehearsal pod's own reading of ``--hf-config-path`` and ``--hf-overrides``, as vLLM's ``ModelConfig`` does it:
the config comes from ``--hf-config-path`` when given (``get_config(self.hf_config_path or self.model, ...)``), and
the overrides JSON is applied to it before anything is derived (flat keys replace, a dict merges into the nested
config it names from 0.12.0). vLLM applies every key, read or not, so the pod does too: keys that change nothing in
the memory model change nothing here. Text argparse refuses ends the process (exit 2); a config the world does not
ship for a path in the pod fails as vLLM's missing config does (``launch``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from vllm_remedy.errors import UserError
from vllm_remedy.vllm import hf_overrides
from vllm_remedy.vllm.catalog import ModelSpec


def config_id(flags: Mapping[str, str], model_id: str) -> str:
    """Where the pod reads its config from: ``--hf-config-path`` when its argv has one, else the model."""
    return str(flags.get("hf-config-path") or "").strip() or model_id


def overridden(spec: ModelSpec, config_from: str, revision: str | None, flags: Mapping[str, str],
               version: tuple[int, int, int]) -> ModelSpec:
    """``spec`` under the argv's ``--hf-overrides`` (unchanged without it, or when the world gave the pod no config
    to apply it to); a UserError with vLLM's words when the release's parser or config refuses the value."""
    text = flags.get("hf-overrides")
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
