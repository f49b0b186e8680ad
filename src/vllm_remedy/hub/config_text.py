"""config.json text to a model spec, and the guarded read of a config file (split from ``hub``, which decides where
the text comes from): whatever is not a usable config is one line naming where it came from."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from vllm_remedy.errors import UserError
from vllm_remedy.hub import ask as hub_ask
from vllm_remedy.hub.unresolved import Unresolved
from vllm_remedy.vllm.catalog import ModelSpec

MAX_CONFIG_BYTES = hub_ask.MAX_CONFIG_BYTES


def spec_from_json(text: str | bytes, name: str, where: str) -> ModelSpec:
    """A model spec from config.json text; anything that is not a usable config is one line naming ``where``."""
    return spec_from_config(config_from_json(text, where), name, where)


def config_from_json(text: str | bytes, where: str) -> Any:
    """config.json text as JSON; anything too large or not JSON is one line naming ``where``."""
    if len(text) > MAX_CONFIG_BYTES:
        raise UserError(f"{where}: refused: larger than {MAX_CONFIG_BYTES // 1024 // 1024} MiB")
    try:
        config = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise UserError(f"{where}: not valid JSON ({exc})") from None
    except (RecursionError, ValueError) as exc:  # nested past Python's stack, or an integer of thousands of digits
        why = "nested too deeply" if isinstance(exc, RecursionError) else exc
        raise UserError(f"{where}: refused: {why}") from None
    return config


def spec_from_config(config: Any, name: str, where: str) -> ModelSpec:
    if not isinstance(config, Mapping):
        raise UserError(f"{where}: not a model config (expected a JSON object, as in a Hugging Face config.json)")
    try:
        return ModelSpec.from_hf_config(config, name=name)
    except (OverflowError, ValueError, TypeError) as exc:  # e.g. 1e400 read as infinity where a size belongs
        huge = _huge_numbers(config)
        what = f"{', '.join(huge)}: beyond any model's size" if huge else exc
        raise UserError(f"{where}: not a usable model config ({what})") from None


def _huge_numbers(config: Mapping[str, Any], prefix: str = "") -> list[str]:
    """``key = value`` for each number (nested configs included) past 2**53, the largest integer a float holds
    exactly: no size of a real model comes near it, and such a value is what overflows the arithmetic."""
    found: list[str] = []
    for key, value in config.items():
        if isinstance(value, Mapping):
            found += _huge_numbers(value, f"{prefix}{key}.")
        elif isinstance(value, (int, float)) and not isinstance(value, bool) and abs(value) > 2 ** 53:
            found.append(f"{prefix}{key} = {value:g}" if isinstance(value, float) else f"{prefix}{key} = {value}")
    return found


def read_file(path: str | Path, where: str) -> bytes:
    """A config file's bytes (at most one past :data:`MAX_CONFIG_BYTES`); one line naming ``where`` for anything
    that is not a regular file — a FIFO or a device would block the read forever or never end."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise Unresolved(f"{where}: not a regular file (a config.json is read from a file)")
        with open(path, "rb") as fh:
            return fh.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise Unresolved(f"{where}: cannot read ({exc.strerror or exc})") from None
