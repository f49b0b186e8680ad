"""Typed readers of one flag's string, as vLLM's argument parser reads it: integers with the release's suffixes,
numbers, booleans, the CUDA-graph capture size under whichever spelling the release has, --limit-mm-per-prompt.

Kept apart from ``settings`` so that ``EngineSettings.from_flags`` reads as the list of flags that move the memory
budget, not as parsing; a value vLLM's parser would refuse is a UserError saying why (vLLM stops at argument parsing).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from vllm_remedy.errors import UserError
from vllm_remedy.vllm.cmdline.values import parse_float, parse_int, refusal, vllm_int
from vllm_remedy.vllm.versions import rules

_TRUE = frozenset({"", "true", "1", "yes", "on"})
_FALSE = frozenset({"false", "0", "no", "off"})

# The flags that cap which batch sizes vLLM captures as CUDA graphs, and the release each arrived in:
# --cuda-graph-sizes in 0.9.0 (vllm#17201, SchedulerConfig); --max-cudagraph-capture-size and
# --cudagraph-capture-sizes in 0.11.1 (vllm#26016, CompilationConfig; --cuda-graph-sizes deprecated there).
# Before 0.9 only --compilation-config's cudagraph_capture_sizes sets them.
CAPTURE_FLAGS_SINCE: dict[str, tuple[int, int, int]] = {
    "cuda-graph-sizes": (0, 9, 0),
    "max-cudagraph-capture-size": (0, 11, 1),
    "cudagraph-capture-sizes": (0, 11, 1),
}
# ... and the release each left: --cuda-graph-sizes, deprecated in 0.11.1 "and will be removed in v0.13.0"
# (engine/arg_utils.py@0.11.1, @0.12.0), is in no file of 0.13.0's package (nor of any later release read).
CAPTURE_FLAGS_UNTIL: dict[str, tuple[int, int, int]] = {"cuda-graph-sizes": (0, 13, 0)}


def read_mm_limits(value: str) -> tuple[tuple[str, int], ...]:
    """``{"image": 1, "video": 0}`` (JSON, 0.8.5 on) or ``image=1,video=0`` (older) as sorted pairs. The remedies'
    ``load_guard.parse_mm_limits`` reads the same flag, but it imports this package (a layer above it)."""
    text = value.strip()
    try:
        data = json.loads(text) if text.startswith("{") else {
            k.strip(): int(v) for k, _, v in (p.partition("=") for p in text.split(",") if p.strip())}
    except ValueError as exc:
        raise UserError(f"limit-mm-per-prompt: {value!r} is neither a JSON object nor modality=count pairs") from exc
    if not isinstance(data, dict) or not all(isinstance(v, int) and not isinstance(v, bool) for v in data.values()):
        raise UserError(f"limit-mm-per-prompt: {value!r} must map each modality to a count")
    return tuple(sorted((str(k), int(v)) for k, v in data.items()))


def read_capture_size(flags: Mapping[str, str], version: str | None) -> int | None:
    """The largest captured batch size from whichever spelling the version takes: a list of sizes (``1 8 128``,
    ``--cuda-graph-sizes``/``--cudagraph-capture-sizes``) counts by its largest. A spelling the version does not
    have is refused, as vLLM's argument parser refuses it."""
    for flag in ("max-cudagraph-capture-size", "cudagraph-capture-sizes", "cuda-graph-sizes"):
        if flag not in flags:
            continue
        since, until = CAPTURE_FLAGS_SINCE[flag], CAPTURE_FLAGS_UNTIL.get(flag)
        if rules(version).version < since:
            raise UserError(f"{flag}: vLLM {rules(version).label} has no such flag (added in "
                            f"{'.'.join(map(str, since))})")
        if until is not None and rules(version).version >= until:
            raise UserError(f"{flag}: vLLM {rules(version).label} has no such flag (removed in "
                            f"{'.'.join(map(str, until))})")
        sizes = [parse_int(p) for p in str(flags[flag]).replace(",", " ").split()]
        if not sizes or any(s is None for s in sizes):
            raise UserError(f"{flag}: {flags[flag]!r} is not a batch size (or a list of them)")
        return max(s for s in sizes if s is not None)
    return None


def read_int(flags: Mapping[str, str], key: str, version: str | None) -> int:
    """The integer ``version``'s argument parser reads (``values.vllm_int``: ``16k`` only where that release takes
    suffixes for this flag); a spelling it refuses stops vLLM at argument parsing, so it is a UserError saying so."""
    r = rules(version)
    number = vllm_int(str(flags[key]), key, r.version)
    if number is None:
        why = refusal(str(flags[key]), key, r.version, r.label)
        raise UserError(f"{key}: {why or f'{flags[key]!r} is not an integer'}")
    return number


def read_float(flags: Mapping[str, str], key: str) -> float:
    """A plain number (``0.9``); anything else is refused."""
    number = parse_float(str(flags[key]))
    if number is None:
        raise UserError(f"{key}: {flags[key]!r} is not a number")
    return number


def read_bool(flags: Mapping[str, str], key: str) -> bool:
    """A boolean flag's value; a bare ``--x`` (empty string) is true."""
    raw = str(flags[key]).strip().lower()
    if raw in _TRUE:
        return True
    if raw in _FALSE:
        return False
    raise UserError(f"{key}: {flags[key]!r} is not true/false")
