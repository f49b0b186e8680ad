"""Flag values as vLLM reads them: the one place text like ``16384``, ``16k`` or ``0.9`` becomes a number.

The policy checks bounds and the memory model budgets with these, so a manifest value can never mean one
number to the drift check and another to the prediction.

vLLM's ``human_readable_int`` (engine/arg_utils.py from 0.8.4, utils/argparse_utils.py from 0.20.0; read in the PyPI
wheels of 41 releases from 0.7.3 to 0.34.0, every boundary below checked against the release before it) takes a
number and one suffix: lowercase ``k``/``m``/``g`` are decimal (``int(float(n) * 1000**x)``, so ``25.6k`` is 25600),
uppercase ``K``/``M``/``G`` binary (``16K`` is 16384, a whole number only: ``1.5K`` is refused); ``t``/``T`` (10**12,
2**40) from 0.13.0 (before, the pattern matched them but the tables lacked them, so ``int()`` refused). No release
reads ``Ki``/``Mi``/``Gi``, a sign or spaces before a suffix. Which flags take it grew release by release
(``HUMAN_INT_SINCE``); every other integer flag is ``type=int``, as ``--max-model-len`` was up to 0.8.3. A spelling
a release refuses stops ``vllm serve`` at argument parsing (``invalid human_readable_int value``).
"""

from __future__ import annotations

import math
import re

#: The first release whose parser reads each flag with ``human_readable_int`` (engine/arg_utils.py at each: an explicit
#: ``type=`` in 0.8.4, then the ``human_readable_int(s|_args)`` set; ``human_readable_int_or_auto`` for
#: ``--max-model-len`` from 0.14.0, the same suffixes plus ``auto``).
HUMAN_INT_SINCE: dict[str, tuple[int, int, int]] = {
    "max-model-len": (0, 8, 4), "max-num-batched-tokens": (0, 9, 1), "kv-cache-memory-bytes": (0, 10, 2),
    "safetensors-prefetch-block-size": (0, 21, 0), "max-num-scheduled-tokens": (0, 26, 0),
    "max-num-queued-tokens": (0, 29, 0),
}
#: ``t``/``T`` suffixes (engine/arg_utils.py@0.13.0).
TERA_SINCE = (0, 13, 0)
_NEWEST = (10**6, 0, 0)  # above every release: the newest parser's rules
_DECIMAL = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
_BINARY = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
_HUMAN_INT = re.compile(r"(\d+(?:\.\d+)?)([kKmMgGtT])")
_SUFFIXED = re.compile(r"\s*[-+]?\d+(?:\.\d+)?\s*[A-Za-z]+\s*")


def vllm_int(value: str, flag: str, version: tuple[int, int, int] = _NEWEST) -> int | None:
    """The integer vLLM ``version``'s argument parser makes of ``value`` for ``flag`` (canonical name), None when it
    refuses it. The default version is the newest parser's rules.

    A sign is read, not judged: whether ``-1`` is allowed is the caller's rule (vLLM reads it as "auto").
    """
    since = HUMAN_INT_SINCE.get(flag)
    if since is not None and version >= since:
        match = _HUMAN_INT.fullmatch(value.strip())
        if match and (match.group(2) not in "tT" or version >= TERA_SINCE):
            number, suffix = match.groups()
            if suffix in _DECIMAL:
                return int(float(number) * _DECIMAL[suffix])
            return int(number) * _BINARY[suffix] if "." not in number else None
    try:
        return int(value)  # argparse's int(), as vLLM's plain path: blanks, "+", "1_000" and "-1" included
    except ValueError:
        return None


def suffixed(value: str) -> bool:
    """A number with a letter suffix (``16k``, ``16Ki``, ``1.5K``): whether a release reads it is that release's
    business (:func:`refusal`), not a plain typo."""
    return bool(_SUFFIXED.fullmatch(value))


def refusal(value: str, flag: str, version: tuple[int, int, int], label: str) -> str | None:
    """Why vLLM ``label`` (``version``) refuses a number spelled like ``16Ki``, ``16k``, ``1e4`` or ``16000.0`` for
    ``flag`` at argument parsing, one phrase; None when it reads the value or the value is no number at all (a
    placeholder such as ``$(LEN)``, which the caller words)."""
    if vllm_int(value, flag, version) is not None:
        return None
    since = HUMAN_INT_SINCE.get(flag)
    if not suffixed(value):
        if not _decimal(value):
            return None
        human = since is not None and version >= since
        decimals = " (a decimal only before a k/m/g suffix, e.g. 16.5k)" if human else ""
        return (f"vLLM {label} refuses {value!r} at argument parsing: it reads --{flag} as a whole number, no "
                f"decimal point or exponent{decimals}")
    if since is None or version < since:
        added = f" (k/K/m/M/g/G suffixes from {'.'.join(map(str, since))})" if since else ""
        return f"vLLM {label} refuses {value!r} at argument parsing: it reads --{flag} as a plain integer{added}"
    tera = "/t" if version >= TERA_SINCE else ""
    binary = "/T" if version >= TERA_SINCE else ""
    return (f"vLLM {label} refuses {value!r} at argument parsing: its suffixes are k/m/g{tera} (x1000, "
            f"decimals allowed) and K/M/G{binary} (x1024, whole numbers only), e.g. 16k = 16000, 16K = 16384")


def _decimal(value: str) -> bool:
    """``1e4``, ``16000.0``: a finite number Python's float() reads, which int() (every release's plain path) does
    not."""
    try:
        return math.isfinite(float(value))
    except ValueError:
        return False


def parse_int(value: str) -> int | None:
    """``"16384"``, ``"16k"`` (16000) or ``"16K"`` (16384) → int, as the newest vLLM reads ``--max-model-len``;
    anything else (``auto``, ``$(LEN)``, ``16Ki``) → None. For a release's own reading, :func:`vllm_int`."""
    return vllm_int(value, "max-model-len")


def parse_float(value: str) -> float | None:
    """A finite float flag value (``"0.9"``); None for placeholders, ``nan`` and ``inf``, which bound nothing."""
    try:
        number = float(value.strip())
    except ValueError:
        return None
    return number if math.isfinite(number) else None
