"""Flag values as vLLM reads them: the one place text like ``16384``, ``16k`` or ``0.9`` becomes a number.

The policy checks bounds and the memory model budgets with these, so a manifest value can never mean one
number to the drift check and another to the prediction.
"""

from __future__ import annotations

import math
import re

# vLLM's human_readable_int: lowercase SI "k" means 1000 in every version that has it; "Ki"/"Mi" are
# binary in the newest. Uppercase K/M/G changed meaning between versions, so we refuse to guess.
_SI = {"k": 10**3}
_IEC = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30}
_HUMAN_INT = re.compile(r"(-?\d+(?:\.\d+)?)(k|Ki|Mi|Gi)?")


def parse_int(value: str) -> int | None:
    """``"16384"``, ``"16k"`` (16000) or ``"16Ki"`` (16384) → int; anything else (``auto``, ``$(LEN)``) → None.

    A sign is read, not judged: whether ``-1`` is allowed is the caller's rule (vLLM reads it as "auto").
    """
    match = _HUMAN_INT.fullmatch(value.strip())
    if not match:
        return None
    number, suffix = match.groups()
    if suffix is None:
        return int(number) if "." not in number else None
    if suffix in _IEC:
        return int(number) * _IEC[suffix] if "." not in number else None
    return int(float(number) * _SI[suffix])


def parse_float(value: str) -> float | None:
    """A finite float flag value (``"0.9"``); None for placeholders, ``nan`` and ``inf``, which bound nothing."""
    try:
        number = float(value.strip())
    except ValueError:
        return None
    return number if math.isfinite(number) else None
