"""How far a vLLM start has got, read from its log: the stage a rollout wait shows while it waits.

A start passes the same stages in every release, and each announces itself with a line of its own (the
wordings below are from real logs, tests/data/logs/SOURCES.md and tests/data/logs/stages/SOURCES.md):

- **loading weights** — ``Starting to load model <id>...``, tqdm's ``Loading safetensors checkpoint shards:
  N% Completed | i/n``, ``Loading weights took S seconds``;
- **profiling** (memory profiling, then the KV cache sized and allocated) — from ``Loading model weights took``
  (V0) / ``Model loading took`` (V1): torch.compile's ``Dynamo bytecode transform time``, ``Memory profiling
  takes``, ``Available KV cache memory``, then ``# GPU blocks`` / ``GPU KV cache size`` / ``Maximum concurrency``;
- **capturing CUDA graphs** — V0 says so (``Capturing the model for CUDA graphs`` until 0.6.3, ``Capturing
  cudagraphs for decoding`` after); V1 logs nothing until the progress bar closes (``Capturing CUDA graph
  shapes`` / ``Capturing CUDA graphs (mixed prefill-decode, PIECEWISE)``: a tqdm bar reaches the container
  log only with its final newline), so once the KV cache is sized a V1 engine is capturing — unless the log
  shows ``enforce_eager=True``, which skips capture (V0 announces its capture, so there the line decides);
- **starting API server** — ``Graph capturing finished in N secs`` or V1's ``init engine (profile, create kv
  cache, warmup model) took``;
- **serving** — ``Starting vLLM API server`` / ``Starting vLLM server on`` / uvicorn's ``Application startup
  complete`` and access lines;
- **crashed** — the startup-log classifier (``parse_startup_log``) found a fatal error; its class is the detail.

Stages only move forward: a line of an earlier stage printed late (another tensor-parallel rank still loading)
does not move the start back. The log may be only its tail (a rollout wait reads a bounded tail); a caller that
reads repeatedly keeps the furthest stage it saw (:func:`furthest`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from vllm_remedy.vllm.log_formats import UP_MARKERS
from vllm_remedy.vllm.outcomes import Failure
from vllm_remedy.vllm.startup_log import unplayed
from vllm_remedy.vllm.startup_log.lines import split_lines
from vllm_remedy.vllm.startup_log.parse import parse_startup_log
from vllm_remedy.vllm.startup_log.report import StartupReport

STARTING, LOADING, PROFILING, GRAPHS, API, SERVING = (
    "starting", "loading weights", "profiling", "capturing CUDA graphs", "starting API server", "serving")
CRASHED = "crashed"
#: The stages of a start, in the order it passes them (``crashed`` can end any of them).
STAGES = (STARTING, LOADING, PROFILING, GRAPHS, API, SERVING)

# (substring, stage it announces, what the detail says); the first match of a line wins.
_MARKERS: tuple[tuple[str, str, str], ...] = (
    ("Starting to load model", LOADING, ""),
    ("Loading model from scratch", LOADING, ""),  # Model Runner V2 (v1/worker/gpu/model_runner.py@0.21.0-@0.34.0)
    ("checkpoint shards", LOADING, "shards"),
    ("Loading weights took", LOADING, ""),
    ("Loading model weights took", PROFILING, "weights"),
    ("Model loading took", PROFILING, "weights"),
    ("Dynamo bytecode transform time", PROFILING, "torch.compile"),
    ("Compiling a graph for", PROFILING, "torch.compile"),
    ("torch.compile takes", PROFILING, "torch.compile"),
    ("torch.compile took", PROFILING, "torch.compile"),
    ("Starting profile run", PROFILING, "memory profiling"),
    ("Memory profiling", PROFILING, "memory profiling"),
    ("the current vLLM instance can use", PROFILING, "memory profiling"),
    ("Profiling CUDA graph memory", PROFILING, "memory profiling"),
    ("Available KV cache memory", PROFILING, "memory profiling"),
    ("GPU KV cache size", PROFILING, "kv"),
    ("# GPU blocks", PROFILING, "kv"),
    ("# cuda blocks", PROFILING, "kv"),
    ("# CUDA blocks", PROFILING, "kv"),
    ("Maximum concurrency for", PROFILING, "kv"),
    ("Capturing the model for CUDA graphs", GRAPHS, "graphs"),
    ("Capturing cudagraphs", GRAPHS, "graphs"),
    ("Capturing CUDA graph", GRAPHS, "graphs"),
    ("Graph capturing finished", API, "CUDA graphs captured"),
    ("init engine (profile, create kv cache, warmup model) took", API, "engine initialised"),
    *((marker, SERVING, "") for marker in UP_MARKERS),
)
_BUDGET = "Available KV cache memory"
_ACCESS = re.compile(r'INFO:\s+\S+ - "(?:GET|POST|PUT|DELETE|HEAD|OPTIONS) ')  # uvicorn's access log
_PROGRESS = re.compile(r"\|\s*(\d+)/(\d+)\b")  # tqdm's "| i/n"
# The engine's config line / non-default args (V0's capture line quotes 'enforce_eager=True' as advice).
_EAGER = re.compile(r"(?<!')\benforce_eager=True|'enforce_eager': True")


@dataclass(frozen=True)
class StartupStage:
    """A stage of :data:`STAGES` or ``crashed``, and what the log says of it (when crashed: the failure class)."""

    stage: str
    detail: str = ""

    def __str__(self) -> str:
        return f"{self.stage} ({self.detail})" if self.detail else self.stage

    @property
    def failure(self) -> str | None:
        """The classifier's failure class (``vllm.outcomes.Failure`` value) of a crashed start, else None."""
        return self.detail if self.stage == CRASHED else None

    @property
    def rank(self) -> int:
        """Position in :data:`STAGES`; ``crashed`` is past every stage."""
        return len(STAGES) if self.stage == CRASHED else STAGES.index(self.stage)


def furthest(seen: StartupStage | None, now: StartupStage) -> StartupStage:
    """The later of two reads of one container's log (a tail that lost the stage's line does not go back)."""
    return now if seen is None or now.rank >= seen.rank else seen


def startup_stage(text: str) -> StartupStage:
    """The stage the log of one container instance has reached; pure, tolerant of colours, ranks and a tail."""
    stage, kind, progress = STARTING, "", ""
    kv_sized = eager = loaded = budgeted = False
    for line in split_lines(text):
        eager = eager or bool(_EAGER.search(line.text))
        found = _marker(line.text)
        if found is None:
            continue
        step, what = found
        if loaded and not budgeted and what in ("graphs", "CUDA graphs captured"):
            # Model Runner V2 from 0.29 captures once while profiling, before the budget line
            # (gpu/cudagraph_utils.py@0.29.0 profile_cudagraph_memory): still profiling.
            step, what = PROFILING, "memory profiling"
        loaded = loaded or what == "weights"
        budgeted = budgeted or what == "kv" or _BUDGET in line.text
        kv_sized = kv_sized or what == "kv"
        if STAGES.index(step) < STAGES.index(stage):
            continue
        if step != stage:
            progress = ""
        stage, kind = step, what
        if what in ("shards", "graphs"):
            counts = _PROGRESS.findall(line.text)
            progress = "/".join(counts[-1]) if counts else progress
    report = parse_startup_log(text)
    if report.failure is not Failure.NONE and not report.truncated:
        return StartupStage(CRASHED, report.failure.value)
    if report.unplayed is not None:  # a rehearsal pod that will never be Ready: the wait says why, not a mystery
        return StartupStage(stage, unplayed.said(report.unplayed))
    if stage == PROFILING and kv_sized and not eager and report.engine != "v0":
        stage, kind = GRAPHS, "graphs"  # V1 prints nothing while it captures (see the module's docstring)
    return StartupStage(stage, _detail(kind, progress, report))


def _marker(text: str) -> tuple[str, str] | None:
    """(stage, detail kind) a line announces, or None for a line that says nothing of the stage."""
    found = next(((stage, kind) for marker, stage, kind in _MARKERS if marker in text), None)
    if found is None and _ACCESS.search(text):
        return SERVING, ""
    return found


def _detail(kind: str, progress: str, report: StartupReport) -> str:
    """What the stage's last line adds: shard or graph progress, the weights loaded, the KV cache's size."""
    if kind == "shards":
        return f"{progress} shards" if progress else ""
    if kind == "weights":
        return "" if report.weights_gib is None else f"weights {report.weights_gib:g} GiB loaded"
    if kind == "graphs":
        return progress or _kv(report)
    if kind == "kv":
        return _kv(report)
    return kind


def _kv(report: StartupReport) -> str:
    if report.kv_cache_tokens is not None:
        size = f"{report.kv_cache_tokens:,} tokens"
    elif report.gpu_blocks is not None:
        size = f"{report.gpu_blocks:,} blocks"
    else:
        return ""
    if report.max_concurrency is not None:
        size += f", {report.max_concurrency:g}x concurrency"
    return f"KV cache {size}"
