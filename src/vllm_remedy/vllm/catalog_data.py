"""The catalogs' YAML files (package data ``vllm/data``), read once each and cached.

Why one reader: the model and GPU catalogs (``catalog``, ``gpu_catalog``) both read their file here, the one file
read allowed in this layer, so a file is parsed once however many lookups a plan makes.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

from vllm_remedy.yamlfile import load_packaged


@cache
def load(filename: str) -> dict[str, Any]:
    """The parsed ``vllm/data/<filename>`` (cached: callers must not mutate it)."""
    text = resources.files("vllm_remedy.vllm").joinpath("data", filename).read_text(encoding="utf-8")
    return load_packaged(text)
