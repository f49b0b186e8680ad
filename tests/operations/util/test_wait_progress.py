"""How a rollout wait shows its progress: when it looks (real time), what a pipe gets (changes and a heartbeat),
what a terminal gets (live lines redrawn in place). The stage text itself is kube.progress's (tested there)."""

from __future__ import annotations

import io
import logging
import sys
from types import SimpleNamespace
from typing import Any

import pytest

from vllm_remedy.kube.progress import Progress
from vllm_remedy.operations.util import live
from vllm_remedy.operations.util.wait import HEARTBEAT, Reports


class Stages:
    """Stands in for ProgressReader: the stage of each look, in turn."""

    def __init__(self, *stages: str) -> None:
        self.stages, self.reads = list(stages), 0

    def read(self, deployment: Any, pods: Any) -> Progress:
        self.reads += 1
        stage = self.stages.pop(0) if len(self.stages) > 1 else self.stages[0]
        return Progress(0, 2, "llama-8b-6b765dc795-x2v9k", stage)


class RealClock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


HOST = SimpleNamespace(name="@k8s/rehearsal/llm/llama-8b", print_prefix="[@k8s/rehearsal/llm/llama-8b] ")


def said(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage().split("] ", 1)[1] for r in caplog.records if r.name == "pyinfra"]


def test_a_pipe_gets_a_line_when_the_stage_changes_and_a_heartbeat_otherwise(caplog: pytest.LogCaptureFixture
                                                                             ) -> None:
    caplog.set_level(logging.INFO, logger="pyinfra")
    real = RealClock()
    reader = Stages("loading weights", "loading weights", "profiling", *["profiling"] * 30)
    report = Reports(HOST, reader, 5.0, None, real=real)  # type: ignore[arg-type]
    cluster = 5000.0
    for _ in range(200):  # polls every 0.5 s of real time (30 s of cluster time at 60x)
        report({}, [], cluster)
        real.t += 0.5
        cluster += 30
    assert reader.reads == 19  # one look per 5 real seconds, not one per poll
    lines = said(caplog)
    assert lines[:2] == [
        "progress at 300s: 0/2 Ready; newest pod llama-8b-6b765dc795-x2v9k: loading weights",
        "progress at 900s: 0/2 Ready; newest pod llama-8b-6b765dc795-x2v9k: profiling"]
    assert len(lines) == 3 and lines[2].endswith(": profiling")  # unchanged: once more after HEARTBEAT looks
    assert lines[2].startswith(f"progress at {900 + HEARTBEAT * 300}s:")


def test_a_terminal_gets_live_lines_redrawn_above_the_cursor(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    screen = io.StringIO()
    monkeypatch.setattr(sys, "stderr", screen)
    board = live.LiveLines(screen)
    board.show("a", "    [a] progress at 5s: 0/2 Ready; newest pod p: loading weights")
    assert screen.getvalue() == "\r\x1b[J    [a] progress at 5s: 0/2 Ready; newest pod p: loading weights\n"
    assert isinstance(sys.stderr, live._Watch)  # others' output is watched while a live line is up

    board.show("b", "    [b] progress at 5s: 0/1 Ready; newest pod q: pulling image vllm/vllm-openai:v0.8.5")
    board.show("a", "    [a] progress at 10s: 0/2 Ready; newest pod p: profiling")
    frames = screen.getvalue().split("\r\x1b[J")
    assert frames[-2].endswith("\x1b[2A") and frames[-1].startswith("    [a] progress at 10s")
    assert frames[-1].count("\n") == 2  # one line per waiting host, in place

    print("    [a] retrying: HTTP 503", file=sys.stderr)  # pyinfra or a warning writes a line: drawing goes on below it
    board.show("a", "    [a] progress at 15s: 0/2 Ready; newest pod p: capturing CUDA graphs")
    assert screen.getvalue().endswith("    [a] retrying: HTTP 503\n\r\x1b[J    [a] progress at 15s: 0/2 Ready; "
                                      "newest pod p: capturing CUDA graphs\n    [b] progress at 5s: 0/1 Ready; "
                                      "newest pod q: pulling image vllm/vllm-openai:v0.8.5\n")
    board.drop("a")
    board.drop("b")
    assert screen.getvalue().endswith("\x1b[1A\r\x1b[J")  # gone: the verdict is printed where they were
    assert sys.stderr is screen


def test_a_live_line_fits_one_row_so_redraws_stay_in_place(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "40")
    screen = io.StringIO()
    board = live.LiveLines(screen)
    board.show("a", "\x1b[1m[a]\x1b[0m " + "x" * 100)
    shown = screen.getvalue().removeprefix("\r\x1b[J").removesuffix("\n")
    assert shown == "\x1b[1m[a]\x1b[0m " + "x" * 35 and len(live._ANSI.sub("", shown)) == 39


def test_no_live_lines_on_a_dumb_terminal_or_a_pipe(monkeypatch: pytest.MonkeyPatch) -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setenv("TERM", "xterm-256color")
    assert live.is_terminal(Tty()) and not live.is_terminal(io.StringIO())
    monkeypatch.setenv("TERM", "dumb")
    assert not live.is_terminal(Tty())
