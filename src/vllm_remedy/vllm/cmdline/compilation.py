"""What ``--compilation-config`` / ``-O`` / ``-cc`` / ``--optimization-level`` say about CUDA graphs, per release.

Read in the PyPI wheels (FlexibleArgumentParser in utils.py / utils/__init__.py / utils/argparse_utils.py, the
``--compilation-config`` type in engine/arg_utils.py, ``CompilationConfig`` in config.py / config/compilation.py and
``VllmConfig.__post_init__``) of 0.6.6, 0.7.3, 0.8.5, 0.9.0, 0.9.2, 0.10.1, 0.11.0, 0.12.0, 0.14.0, 0.16.0, 0.19.0,
0.20.0, 0.28.0 and 0.34.0:

* up to 0.8.x ``-O``/``--compilation-config`` is ``CompilationConfig.from_cli``: ``0``-``3`` is the level, anything
  else ``ast.literal_eval`` (a malformed value raises SyntaxError past argparse: a traceback, not judged here);
* 0.9.0 reads it with ``json.loads`` (``invalid <lambda> value``); from 0.9.2 ``parse_dataclass`` validates the JSON
  with pydantic and re-raises ``ArgumentTypeError(repr(ValidationError))`` (``refusal``);
* ``--compilation-config.k=v`` from 0.9.0 (``dict_args`` in utils.py@0.9.0, which leaves ``-O3`` to argparse);
* 0.9.2-0.11.x: FlexibleArgumentParser turns ``-O3`` / ``-O=3`` / ``-O 3`` into ``-O.level=3``, and every dotted
  ``-O.k=v`` / ``--compilation-config.k=v`` into one JSON dict appended after all other arguments (it replaces a JSON
  ``--compilation-config`` given anywhere: argparse keeps the last value; the same through 0.34.0);
* from 0.12.0 ``-O<n>`` is ``--optimization-level n`` (O0: no compilation and ``cudagraph_mode`` NONE, config/vllm.py
  ``OPTIMIZATION_LEVEL_00``); ``-O.k=v`` still means ``-cc.k=v`` in 0.12.x (deprecated), and from 0.14.0 it is an
  optimization level (not a compilation key, so not honoured here);
* CUDA graphs (V1): an explicit ``level`` (``mode`` from 0.12.0, ``level`` its alias through 0.17) other than 3
  (PIECEWISE / VLLM_COMPILE) captures none (0.9-0.11: ``cudagraph_mode`` defaults to NONE off PIECEWISE; 0.12+:
  "Cudagraph mode ... is not compatible with compilation mode ... Overriding to NONE"), level/mode 0 compiles nothing
  either; ``cudagraph_mode: NONE`` (0.10.1+) and ``use_cudagraph: false`` (0.9.2-0.11.x, deprecated into
  cudagraph_mode NONE) capture none; ``cudagraph_capture_sizes`` replaces the default sizes (over --cuda-graph-sizes
  through 0.11.0; both together are refused from 0.11.1) and ``max_cudagraph_capture_size`` (0.11.1+) caps them.
  ``max_capture_size`` is never an input (a PrivateAttr, then ``field(init=False)``).

V0 captures its graphs whatever the level (only ``--enforce-eager`` stops them); the caller applies ``graphs_off`` and
``compile_off`` to V1 starts only.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vllm_remedy.vllm.cmdline.compilation_fields import unexpected

Version = tuple[int, int, int]
JSON_SINCE: Version = (0, 9, 0)  # json.loads (0.9.0), then pydantic's validate_json (0.9.2)
VALIDATED_SINCE: Version = (0, 9, 2)
DOTTED_SINCE: Version = (0, 9, 2)  # -O.k=v and -O3 as -O.level=3 (utils/__init__.py@0.9.2; 0.9.0 has neither)
LONG_DOTTED_SINCE: Version = (0, 9, 0)  # --compilation-config.k=v (utils.py@0.9.0 ``dict_args``; 0.8.5 has none)
OPT_LEVEL_SINCE: Version = (0, 12, 0)  # -O<n> is --optimization-level (utils/argparse_utils.py@0.12.0)
DOTTED_O_UNTIL: Version = (0, 14, 0)  # first release read where -O.k=v is an optimization level, not -cc.k=v
CUDAGRAPH_MODE_SINCE: Version = (0, 10, 1)
USE_CUDAGRAPH: tuple[Version, Version] = ((0, 9, 2), (0, 12, 0))  # honoured from, removed in
MODE_SINCE: Version = (0, 12, 0)
LEVEL_ALIAS_UNTIL: Version = (0, 18, 0)  # config/compilation.py@0.18.0 has no ``level``
MAX_CAPTURE_KEY_SINCE: Version = (0, 11, 1)  # vllm#26016, with --max-cudagraph-capture-size
_PIECEWISE = 3


@dataclass(frozen=True)
class Compilation:
    """What the start's compilation settings do to CUDA graphs (V1): none captured (``graphs_off``), nothing compiled
    either (``compile_off``: the memory of --enforce-eager), or the largest captured size (``max_capture``) when the
    config sets the sizes (``sizes_set``: a capture-size flag would then not change them)."""

    graphs_off: bool = False
    compile_off: bool = False
    max_capture: int | None = None
    sizes_set: bool = False


def refusal(value: str, version: Version, dash_o: bool = False) -> str | None:
    """argparse's words refusing ``value`` as a compilation config in ``version`` (None when it parses or when the
    release's failure is not argparse's): the option strings as that release names them, then the type's error."""
    text = value  # a placeholder never gets here (``refused`` skips ``ServerCommand.placeholder`` words)
    if version < JSON_SINCE or (version < OPT_LEVEL_SINCE and text in ("0", "1", "2", "3")):
        return None
    if version >= OPT_LEVEL_SINCE and dash_o:
        return None  # -O<n> / -O <n> is --optimization-level there
    names = "--compilation-config/-cc" if version >= OPT_LEVEL_SINCE else "--compilation-config/-O"
    try:
        json.loads(text)
    except ValueError as exc:
        if version < VALIDATED_SINCE:
            return f"argument {names}: invalid <lambda> value: {text!r}"
        return (f"argument {names}: 1 validation error for CompilationConfig\n  Invalid JSON: {_jiter(text, exc)} "
                f"[type=json_invalid, input_value={text!r}, input_type=str]")
    if (words := unexpected(text, version)) is not None:  # a key the release lacks, from 0.13.0 (level from 0.18.0)
        return f"argument {names}: {words}"
    return None


def dotted_refusal(flags: Mapping[str, str], version: Version) -> str | None:
    """argparse's refusal of the JSON dict FlexibleArgumentParser builds from dotted keys (``-cc.level=0``): a key the
    release's CompilationConfig lacks (from 0.13.0)."""
    dotted = {k.split(".", 1)[1]: _scalar(str(v)) for k, v in flags.items()
              if k.startswith(("compilation-config.", "cc.")) and "$" not in str(v) and "{{" not in str(v)}
    if not dotted or (words := unexpected(json.dumps(dotted), version)) is None:
        return None
    return f"argument --compilation-config/-cc: {words}"


def _jiter(text: str, exc: ValueError) -> str:
    """pydantic's JSON error text (jiter's), e.g. ``key must be a string at line 1 column 2``."""
    try:
        from pydantic_core import from_json
        from_json(text)
    except ValueError as err:
        return str(err)
    return str(exc)


def read(flags: Mapping[str, str], version: Version) -> Compilation:
    """The graphs the start's compilation flags leave (canonical keys: ``compilation-config``, its dotted keys
    ``compilation-config.k``, ``optimization-level`` for ``-O...``/``--optimization-level``); unreadable values are
    taken as saying nothing (their refusal is ``refusal``'s)."""
    config: dict[str, Any] = {}
    opt = flags.get("optimization-level")
    opt_level: int | None = None
    raw = flags.get("compilation-config")
    if raw is not None:
        config = _parse(str(raw), version)
    dotted = {k.split(".", 1)[1]: _scalar(str(v)) for k, v in flags.items()
              if k.startswith("compilation-config.") or (k.startswith("cc.") and version >= OPT_LEVEL_SINCE)}
    if opt is not None:
        text = str(opt).strip()
        if version < OPT_LEVEL_SINCE:
            if text.startswith("."):
                if version >= DOTTED_SINCE:
                    key, _, val = text[1:].partition("=")
                    dotted[key] = _scalar(val)
            elif text in ("0", "1", "2", "3") or (version >= DOTTED_SINCE and not text.startswith("{")):
                if version >= DOTTED_SINCE:
                    dotted["level"] = _scalar(text.lstrip("="))
                else:
                    config = {"level": int(text)} if text.isdigit() else config
            else:
                config = _parse(text, version)  # -O '<json>' is --compilation-config
        elif text.startswith(".") and version < DOTTED_O_UNTIL:
            key, _, val = text[1:].partition("=")
            dotted[key] = _scalar(val)
        elif text.lstrip("=") in ("0", "1", "2", "3"):
            opt_level = int(text.lstrip("="))
    if dotted and version >= LONG_DOTTED_SINCE:
        config = dotted  # appended after every argument (every release read): argparse keeps it over a JSON value
    return _graphs(config, opt_level, version)


def _graphs(config: Mapping[str, Any], opt_level: int | None, version: Version) -> Compilation:
    mode = config.get("mode") if version >= MODE_SINCE else None
    if mode is None and (version < MODE_SINCE or version < LEVEL_ALIAS_UNTIL):
        mode = config.get("level")
    mode = _int(mode)
    if mode is None and opt_level == 0:
        mode = 0
    compile_off = mode == 0
    graphs_off = compile_off or (mode is not None and mode != _PIECEWISE)
    cg = config.get("cudagraph_mode")
    if version >= CUDAGRAPH_MODE_SINCE and isinstance(cg, str) and cg.strip().upper() == "NONE":
        graphs_off = True
    elif CUDAGRAPH_MODE_SINCE <= version < MODE_SINCE and isinstance(cg, str) and cg.strip():
        graphs_off = compile_off = False  # an explicit mode is kept off PIECEWISE there: sized as compiled, graphs on
    if version >= CUDAGRAPH_MODE_SINCE and cg is None and opt_level == 0:
        graphs_off = True
    use = config.get("use_cudagraph")
    if USE_CUDAGRAPH[0] <= version < USE_CUDAGRAPH[1] and use is False:
        graphs_off = True
    sizes = config.get("cudagraph_capture_sizes")
    largest = max((s for s in sizes if isinstance(s, int)), default=None) if isinstance(sizes, list) else None
    cap = _int(config.get("max_cudagraph_capture_size")) if version >= MAX_CAPTURE_KEY_SINCE else None
    max_capture = cap if cap is not None else largest
    return Compilation(graphs_off, compile_off, max_capture if max_capture and max_capture > 0 else None,
                       max_capture is not None)


def _parse(text: str, version: Version) -> dict[str, Any]:
    """The config a value sets, ``{}`` when it is unreadable; a bare level (``3``) up to 0.11.x is ``{"level": 3}``."""
    text = text.strip()
    if text in ("0", "1", "2", "3") and version < OPT_LEVEL_SINCE:
        return {"level": int(text)}
    try:
        value = json.loads(text) if version >= JSON_SINCE else ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return {}
    return value if isinstance(value, dict) else {}


def _scalar(text: str) -> Any:
    """A dotted value as FlexibleArgumentParser reads it: JSON when it parses, else the text."""
    try:
        return json.loads(text)
    except ValueError:
        return text


#: CompilationMode's names (config/compilation.py@0.12.0), which the pydantic field takes as well as the numbers.
_MODES = {"NONE": 0, "STOCK_TORCH_COMPILE": 1, "DYNAMO_TRACE_ONCE": 2, "VLLM_COMPILE": 3}


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, str) and value.strip().upper() in _MODES:
        return _MODES[value.strip().upper()]
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None
