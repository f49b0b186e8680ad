"""Startup-log diagnosis: parse a vLLM container log, classify how the start ended, and render
realistic logs of any version for the rehearsal cluster (the same format table drives both).

The four names below are imported on first use (PEP 562), not with the package: a module that needs only one
submodule (``config_refusal`` for ``estimate``'s batch wording) then no longer imports the parser, the classifier
and the renderer with it — ~14 ms of every ``vllm-remedy estimate`` process (bench/bench_cli_start.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vllm_remedy import lazy

if TYPE_CHECKING:
    from vllm_remedy.vllm.startup_log.failure import classify
    from vllm_remedy.vllm.startup_log.parse import parse_startup_log
    from vllm_remedy.vllm.startup_log.render import render_startup_log
    from vllm_remedy.vllm.startup_log.report import StartupReport

__all__ = ["StartupReport", "classify", "parse_startup_log", "render_startup_log"]

_FROM = {"classify": "failure", "parse_startup_log": "parse", "render_startup_log": "render", "StartupReport": "report"}

__getattr__ = lazy.names(__name__, _FROM, globals())
