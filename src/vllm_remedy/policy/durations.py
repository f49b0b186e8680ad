"""Durations as people write them in policies and on the command line ("30m", "2h", "1h30m").

Kept to whole seconds and the units an operator means for toggles and stability windows; anything
else (a bare number, negative, fractional, unknown or repeated units) is rejected rather than guessed.
"""

from __future__ import annotations

import re

_UNIT_SECONDS = {"d": 86400, "h": 3600, "m": 60, "s": 1}
_PART = re.compile(r"(\d+)([dhms])")
_WHOLE = re.compile(r"(?:\d+[dhms])+")


def parse_duration(text: str) -> int:
    """``"1h30m"`` → 5400 seconds. Units d/h/m/s, largest first, each at most once; result > 0.

    Raises ValueError with a short reason; callers add the file/key they read it from.
    """
    spelled = text.strip()
    if not _WHOLE.fullmatch(spelled):
        raise ValueError(f'not a duration: {text!r} (expected e.g. "30m", "2h", "1h30m")')
    units = [unit for _, unit in _PART.findall(spelled)]
    order = list(_UNIT_SECONDS)
    if [order.index(u) for u in units] != sorted({order.index(u) for u in units}):
        raise ValueError(f"not a duration: {text!r} (units must be largest first and appear once)")
    seconds = sum(int(n) * _UNIT_SECONDS[u] for n, u in _PART.findall(spelled))
    if seconds <= 0:
        raise ValueError(f"not a duration: {text!r} (must be longer than 0s)")
    return seconds


def format_duration(seconds: int) -> str:
    """The inverse of :func:`parse_duration` for messages: 5400 → ``"1h30m"``."""
    if seconds <= 0:
        return "0s"
    parts = []
    for unit, size in _UNIT_SECONDS.items():
        count, seconds = divmod(seconds, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts)
