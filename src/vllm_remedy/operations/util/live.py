"""Live lines on a terminal: one per waiting host, rewritten in place (``\\r`` + clear), kept just above the cursor.

Why above the cursor and not on it: during execution pyinfra's own spinner redraws the cursor's line every
0.2 s (``"    - {host}\\r"``) and would overwrite a line drawn there. So the live lines end with a newline;
the next redraw moves the cursor back up over them (``ESC[nA``), clears to the end of the screen (``ESC[J``,
the spinner's line included; it redraws itself) and writes them again. If anything else printed a line in
between — a pyinfra log line, a retry warning — moving up would overwrite it, so the next draw starts below
it instead, leaving the last drawn state in the scrollback. To know, the terminal's ``sys.stderr`` is watched
while live lines are shown: every newline written by someone else is noticed.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import threading
from typing import IO, Any

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def is_terminal(stream: IO[str] | None = None) -> bool:
    """Whether live lines can be drawn: a terminal that knows cursor movement (not ``TERM=dumb``)."""
    stream = stream or sys.stderr
    try:
        return bool(stream.isatty()) and os.environ.get("TERM", "") != "dumb"
    except (AttributeError, ValueError):  # closed or replaced by something that is no file
        return False


class _Watch:
    """Stands in for ``sys.stderr`` while live lines are shown; tells the board when others wrote a newline."""

    def __init__(self, terminal: IO[str], board: LiveLines) -> None:
        self.terminal, self._board = terminal, board

    def write(self, text: str) -> int:
        if "\n" in text:
            self._board.moved = True
        return self.terminal.write(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.terminal, name)


class LiveLines:
    """The live lines of one terminal, keyed (one per waiting host); redrawn whole on every change."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream
        self.lines: dict[str, str] = {}
        self.drawn = 0  # live lines on screen right above the cursor
        self.moved = False  # someone else wrote a line since the last draw
        self._lock = threading.Lock()
        self._saved: Any = None

    def show(self, key: str, text: str) -> None:
        """Set ``key``'s line to ``text`` and redraw."""
        with self._lock:
            if not self.lines:
                self._watch()
            self.lines[key] = text
            self._draw()

    def drop(self, key: str) -> None:
        """Remove ``key``'s line from the screen (what replaces it is the caller's next log line)."""
        with self._lock:
            if self.lines.pop(key, None) is None:
                return
            self._draw()
            if not self.lines:
                self._unwatch()

    def _draw(self) -> None:
        width = shutil.get_terminal_size((100, 24)).columns
        out = [f"\x1b[{self.drawn}A" if self.drawn and not self.moved else "", "\r\x1b[J"]
        out += [_fit(text, width) + "\n" for text in self.lines.values()]
        try:
            self.stream.write("".join(out))
            self.stream.flush()
        except (OSError, ValueError):  # the terminal went away: the wait it decorates goes on regardless
            return
        self.drawn, self.moved = len(self.lines), False

    def _watch(self) -> None:
        if sys.stderr is self.stream:
            self._saved, sys.stderr = sys.stderr, _Watch(self.stream, self)

    def _unwatch(self) -> None:
        if self._saved is not None and isinstance(sys.stderr, _Watch):
            sys.stderr = self._saved
        self._saved, self.drawn = None, 0


def _fit(text: str, width: int) -> str:
    """``text`` cut to one terminal row (colour codes take no room), so moving up by line count is exact."""
    room, out, pos = max(width - 1, 10), [], 0
    for m in _ANSI.finditer(text):
        part = text[pos:m.start()]
        out.append(part[:room])
        room -= min(room, len(part))
        out.append(m.group())
        pos = m.end()
    out.append(text[pos:][:room])
    return "".join(out)


_BOARDS: dict[int, LiveLines] = {}


def board(stream: IO[str] | None = None) -> LiveLines:
    """The one board of this process's terminal (parallel hosts share it, each with its own line)."""
    stream = stream or sys.stderr
    if isinstance(stream, _Watch):
        stream = stream.terminal
    return _BOARDS.setdefault(id(stream), LiveLines(stream))
