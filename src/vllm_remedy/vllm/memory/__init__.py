"""vLLM's startup memory model: ``estimate(model, gpu, settings) -> Estimate``.

Split in three: ``settings`` (flags and the version's defaults), ``terms`` (one formula per budget
term, fitted constants documented there) and ``core`` (the budget, blocks and outcome).

The five names below are imported on first use (PEP 562), not with the package: a command that needs only the
settings (``args`` reads ``EngineSettings``' flag rules through ``settings``) then no longer imports the whole model.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from vllm_remedy.vllm.memory.core import Estimate, estimate
    from vllm_remedy.vllm.memory.settings import EngineSettings, Resolved, resolve

__all__ = ["EngineSettings", "Estimate", "Resolved", "estimate", "resolve"]

_FROM = {"Estimate": "core", "estimate": "core", "EngineSettings": "settings", "Resolved": "settings",
         "resolve": "settings"}


def __getattr__(name: str) -> Any:
    """The package's five names, each from its submodule on first use; AttributeError for anything else (so
    ``from vllm_remedy.vllm.memory import <submodule>`` still imports the submodule)."""
    sub = _FROM.get(name)
    if sub is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{sub}"), name)
    globals()[name] = value
    return value
