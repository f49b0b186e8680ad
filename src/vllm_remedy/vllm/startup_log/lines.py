"""Turn raw container-log text into clean lines: colours, wrappers and process prefixes removed.

Logs reach us through kubectl, docker compose, CI consoles and GitHub comments, each adding its
own decoration; vLLM adds ANSI colours and ``(VllmWorker rank=1 pid=…)``-style prefixes. The
parser wants the message and which rank printed it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# ESC-based and caret-notation ("^[[0;36m", as pasted from terminals) colour codes.
_ANSI = re.compile(r"(?:\x1b|\^\[)\[[0-9;?]*[A-Za-z]")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_PROCESS = re.compile(r"\((?P<name>[A-Za-z][\w.-]*)(?: rank=(?P<rank>\d+))? pid=\d+(?:, ip=[^)]*)?\)")
_TP = re.compile(r"_TP(\d+)")
# Lines vLLM's logger wrote: LEVEL MM-DD HH:MM:SS [file.py:123] (brackets from 0.8.0).
_HEADER = re.compile(r"\b(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? "
                     r"\[?[\w./-]+\.py:\d+\] ")


@dataclass(frozen=True)
class Line:
    """One physical log line after cleaning; ``rank`` is the tensor-parallel rank that printed it."""

    index: int
    text: str  # colour-free original, for evidence
    message: str  # text after the last vLLM header / process prefix
    rank: int
    level: str | None


def strip_ansi(text: str) -> str:
    """Remove colour codes, ESC-based or pasted in caret notation, so patterns see plain text."""
    return _ANSI.sub("", text)


def split_lines(text: str) -> list[Line]:
    """Clean every line; tqdm's carriage returns split a physical line into its real ones."""
    out: list[Line] = []
    for raw in re.split(r"\r\n|\n|\r", strip_ansi(text)):
        clean = _CONTROL.sub("", raw).rstrip()
        if clean.strip():
            out.append(_line(len(out), clean))
    return out


def _line(index: int, text: str) -> Line:
    rank = 0
    for m in _PROCESS.finditer(text):
        rank = max(rank, _rank_of(m.group("name"), m.group("rank")))
    message, level = text, None
    headers = list(_HEADER.finditer(text))
    if headers:
        last = headers[-1]
        message, level = text[last.end():], last.group("level")
    else:
        prefixes = list(_PROCESS.finditer(text))
        if prefixes:
            message = text[prefixes[-1].end():].lstrip()
    return Line(index=index, text=text.strip(), message=message.strip(), rank=rank, level=level)


def _rank_of(name: str, rank: str | None) -> int:
    """Rank 0 is the driver / engine core; V0's extra workers only say ``VllmWorkerProcess``."""
    if rank is not None:
        return int(rank)
    tp = _TP.search(name)
    if tp:
        return int(tp.group(1))
    return 1 if name.startswith(("VllmWorkerProcess", "RayWorkerWrapper")) else 0
