"""Sanity bounds for the vLLM flags the memory model does not type: ports, counts, sizes.

``EngineSettings`` types the flags that move the memory budget; every other flag reached a manifest unchecked
(``--set port=99999`` printed a manifest vLLM would refuse at start). vLLM's own argparse types are not in
the frozen flag table, so this judges only what is obviously wrong whatever the release: a port outside
1–65535, a count or size that is not a number or is negative, an integer count or max-model-len beyond
int32 (vLLM's argparse takes any Python int, e.g. ``99999999999999999999``, then fails at start or later in
int32 kernels and tensors), and a value with spaces around it (a slip like ``--set max-model-len= 4096``).

``max-model-len`` and a few token counts and sizes are parsed by vLLM's ``human_readable_int`` (``16k`` is 16000,
``16K`` 16384), every other count by ``int()``: each is read here as the newest release reads that flag
(``values.vllm_int``; a manifest's own release is judged by the memory model, ``EngineSettings.from_flags``). A size
in bytes is not a count: vLLM keeps it in a Python int, so int32 does not bound it.
"""

from __future__ import annotations

import re

from vllm_remedy.vllm.cmdline import table
from vllm_remedy.vllm.cmdline.values import parse_float, parse_int, vllm_int

#: Flags whose value is a TCP port.
PORTS: frozenset[str] = frozenset(n for n in table.SINGLE_VALUE if n == "port" or n.endswith("-port"))
_COUNT = re.compile(r"^num-|^max-|-(size|count|tokens|len|rank|slots|workers|loras|steps|experts|bytes|gb)$")
#: Count-like names that are something else: -1 means "no limit" (max-logprobs), the memory model types it
#: (max-model-len), or the value is JSON (default-mm-loras).
_NOT_COUNTS = frozenset({"max-logprobs", "max-model-len", "default-mm-loras"})
#: Sizes vLLM reads as a float (GiB); swap-space is one whose name does not say so.
_FLOATS = frozenset({"kv-offloading-size", "swap-space"})


#: The largest integer a count or max-model-len may be: vLLM keeps token counts and positions in int32.
INT_MAX = 2**31 - 1


def spacing(value: str) -> str | None:
    """Why a value with spaces around it is refused (one phrase), None when it has none."""
    return f"{value!r} has spaces around it" if value != value.strip() else None


def is_count(name: str) -> bool:
    """A single-value flag whose value is a count or size, so a negative one is never meant."""
    return name in table.SINGLE_VALUE and name not in _NOT_COUNTS and (bool(_COUNT.search(name)) or name in _FLOATS)


def check(name: str, value: str) -> str | None:
    """Why ``value`` is obviously wrong for flag ``name`` (one phrase, e.g. ``99999 is not a TCP port
    (1-65535)``), None when it may be right. Only ports and counts are judged."""
    if name in PORTS:
        port = vllm_int(value, name)  # type=int: no suffix
        return None if port is not None and 1 <= port <= 65535 else f"{value!r} is not a TCP port (1-65535)"
    if name == "max-model-len":
        length = parse_int(value)
        return _too_large(value) if length is not None and length > INT_MAX else None
    if not is_count(name):
        return None
    if name.endswith("-gb") or name in _FLOATS:
        number: float | None = parse_float(value)
        kind = "a number"
    else:
        number, kind = vllm_int(value, name), "an integer"
    if number is None:
        return f"{value!r} is not {kind}"
    if number < 0:
        return f"{value} must not be negative"
    return _too_large(value) if number > INT_MAX and not name.endswith("-bytes") else None


def _too_large(value: str) -> str:
    return f"{value} is too large (at most {INT_MAX})"
