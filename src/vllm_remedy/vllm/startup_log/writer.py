"""How a vLLM release prints one startup-log line: its header style, the process prefixes of each role and rank,
its colours and its clock - the ``Writer`` the renderer (``render``) and its helpers (``late``, ``config_refusal``,
``pinned_lines``) write every line through.

Apart from ``render`` because this is the line format, which changes between releases on its own schedule
(``file.py:12]`` before 0.8, ``[file.py:12]`` after; worker tags renamed at 0.10.1 and 0.10.2; colour from 0.12),
while ``render`` is the sequence of a start and how it fails. Nothing here reads a clock.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from vllm_remedy.vllm.log_formats import Template, fill, parse_version
from vllm_remedy.vllm.startup_log.frames import traceback_text

_CYAN_OLD, _CYAN, _RESET = "\x1b[1;36m", "\x1b[0;36m", "\x1b[0;0m"
_LEVEL_COLOUR = {"DEBUG": "\x1b[37m", "INFO": "\x1b[32m", "WARNING": "\x1b[33m", "ERROR": "\x1b[31m"}


class Writer:
    """Accumulates log lines with the version's header, prefixes and clock."""

    def __init__(
        self, version: str, engine: str, tp_size: int, started: datetime, color: bool, runner: str = "v1"
    ) -> None:
        self.v = parse_version(version)
        self.engine, self.tp, self.color, self.runner = engine, tp_size, color, runner
        self.clock = started
        self.lines: list[str] = []

    def prefix(self, role: str, rank: int = 0) -> str:
        """The process tag this version prints before a role's lines (``(Worker_TP1 pid=301)``; none for the
        API server before 0.10.1), coloured as vLLM colours it."""
        name = self._process_name(role, rank)
        if name is None:
            return ""
        if self.v < (0, 12, 0):  # before 0.12 the prefix was always cyan, tty or not
            return f"{_CYAN_OLD}({name}){_RESET} "
        return f"{_CYAN}({name}){_RESET} " if self.color else f"({name}) "

    def _process_name(self, role: str, rank: int) -> str | None:
        new_prefixes = self.v >= (0, 10, 1)
        if role == "api":
            return "APIServer pid=1" if new_prefixes else None
        engine_name = None
        if self.engine == "v1" and new_prefixes:
            engine_name = ("EngineCore" if self.v >= (0, 18, 0) else "EngineCore_DP0") + " pid=231"
        if role == "engine" or self.tp == 1:
            return engine_name
        if self.engine == "v0":
            return None if rank == 0 else f"VllmWorkerProcess pid={300 + rank}"
        if self.v < (0, 10, 2):
            return f"VllmWorker rank={rank} pid={300 + rank}"
        return f"Worker_TP{rank} pid={300 + rank}"

    def log(
        self,
        role: str,
        message: str,
        *,
        level: str = "INFO",
        source: str = "worker.py",
        rank: int = 0,
        step: float = 0.4,
        site: str | None = None,
        line: int | None = None,
    ) -> None:
        """One logger record in the version's header style, ``step`` seconds after the last; every line of a
        multi-line message carries the same header, as vLLM's formatter prefixes them. ``site`` stands for the
        logging call (its line number is derived from it; default the message) unless ``line`` gives the real one."""
        self.clock += timedelta(seconds=step)
        stamp = self.clock.strftime("%m-%d %H:%M:%S")
        where = f"{source}:{line if line is not None else 100 + len(site or message) % 800}"
        where = f"[{where}]" if self.v >= (0, 8, 0) else f"{where}]"
        shown = f"{_LEVEL_COLOUR[level]}{level}\x1b[0m" if self.color and self.v >= (0, 12, 0) else level
        for part in message.split("\n"):
            self.lines.append(f"{self.prefix(role, rank)}{shown} {stamp} {where} {part}")

    def raw(self, role: str, text: str, rank: int = 0) -> None:
        """A line printed without vLLM's logger header (progress bars, uvicorn's own lines)."""
        self.lines.append(f"{self.prefix(role, rank)}{text}")

    def each_rank(self, message: str, **kw: Any) -> None:
        """The same message from every TP worker, as each rank logs its own copy."""
        for rank in range(self.tp):
            self.log("worker", message, rank=rank, **kw)

    def template(self, role: str, tpl: Template, values: dict[str, Any], *, ranks: bool = False) -> None:
        """A ``log_formats`` message filled with ``values``, so the parser reads back those very figures."""
        text = fill(tpl, values)
        if ranks:
            self.each_rank(text, level=tpl.level, source=tpl.source)
        else:
            self.log(role, text, level=tpl.level, source=tpl.source)

    def traceback(self, role: str, frames: list[tuple[str, str]], last: str, source: str = "core.py") -> None:
        """A traceback logged through vLLM's logger with no message of its own: one record, one call site."""
        self.log(role, "\n".join(traceback_text(frames, last)), level="ERROR", source=source, step=0,
                 site="Traceback")
