"""Startup-log diagnosis: parse a vLLM container log, classify how the start ended, and render
realistic logs of any version for the rehearsal cluster (the same format table drives both)."""

from vllm_remedy.vllm.startup_log.failure import classify
from vllm_remedy.vllm.startup_log.parse import parse_startup_log
from vllm_remedy.vllm.startup_log.render import render_startup_log
from vllm_remedy.vllm.startup_log.report import StartupReport

__all__ = ["StartupReport", "classify", "parse_startup_log", "render_startup_log"]
