"""The ``Template`` record of ``log_formats`` and vLLM version parsing, apart so the per-era tables can share them."""

from __future__ import annotations

import re
from dataclasses import dataclass

Version = tuple[int, int, int]

# The rehearsal cluster renders this when it is asked for a version older than the table.
OLDEST: Version = (0, 6, 0)


def parse_version(text: str) -> Version:
    """``"0.6.4.post1"`` → ``(0, 6, 4)``; dev/rc suffixes are ignored (they log like the release)."""
    parts = re.findall(r"\d+", text.split("+")[0])[:3]
    if not parts:
        raise ValueError(f"not a vLLM version: {text!r}")
    nums = [int(p) for p in parts] + [0] * (3 - len(parts))
    return nums[0], nums[1], nums[2]


@dataclass(frozen=True)
class Template:
    """One log message as vLLM prints it between ``since`` (inclusive) and ``until`` (exclusive)."""

    kind: str
    text: str
    since: Version = OLDEST
    until: Version | None = None
    engine: str | None = None  # "v0" / "v1" / None (both)
    level: str = "INFO"
    source: str = "worker.py"  # file name vLLM's logger shows for this message
    render: bool = True  # False: parse-only (DEBUG lines, messages we never simulate)
    parse: bool = True  # False: render-only (the parser reads it with a looser pattern)
    exception: str | None = None  # "ValueError": rendered as "ValueError: <text>", optional when parsing
    tail: str = ""  # rendered after the text, placeholders filled; not parsed (advice that changes every release)
    runner: str | None = None  # "v1" (gpu_model_runner.py) / "v2" (Model Runner V2) / None (both)

    def valid_for(self, version: Version, engine: str, runner: str = "v1") -> bool:
        """Whether this release, engine and model runner print this wording (``until`` is exclusive)."""
        in_range = self.since <= version and (self.until is None or version < self.until)
        return in_range and (self.engine is None or self.engine == engine) and self.runner in (None, runner)


def v(text: str) -> Version:
    """Short alias of :func:`parse_version` so the table below stays readable."""
    return parse_version(text)
