"""vLLM's startup memory model: ``estimate(model, gpu, settings) -> Estimate``.

Split in three: ``settings`` (flags and the version's defaults, into ``resolved.Resolved``), ``terms`` (one
formula per budget term, fitted constants documented there; the weights in ``weights``) and ``core`` (the budget
and blocks; the checks on them in ``start_checks``).

The five names below are imported on first use (PEP 562), not with the package: a command that needs only the
settings (``args`` reads ``EngineSettings``' flag rules through ``settings``) then no longer imports the whole model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vllm_remedy import lazy

if TYPE_CHECKING:
    from vllm_remedy.vllm.memory.core import Estimate, estimate
    from vllm_remedy.vllm.memory.resolved import Resolved
    from vllm_remedy.vllm.memory.settings import EngineSettings, resolve

__all__ = ["EngineSettings", "Estimate", "Resolved", "estimate", "resolve"]

_FROM = {"Estimate": "core", "estimate": "core", "EngineSettings": "settings", "Resolved": "resolved",
         "resolve": "settings"}

__getattr__ = lazy.names(__name__, _FROM, globals())
