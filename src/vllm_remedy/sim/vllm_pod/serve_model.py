"""``vllm serve`` given ``--model``: what vLLM's CLI around argparse does with it, by release (read per wheel).

* 0.5.5-0.8.0: the parser takes it, then ``serve`` refuses a model other than the default (``if args.model !=
  EngineArgs.model: raise ValueError("With `vllm serve`, you should provide the model as a positional argument
  instead of via the `--model` option.")``: vllm/scripts.py to 0.7.2, entrypoints/cli/serve.py@0.7.3/0.8.0);
* 0.8.3-0.11.0: FlexibleArgumentParser.parse_args raises before argparse when any word is exactly ``--model``
  (``any(arg == '--model' for arg in args)``, utils.py@0.8.3-0.9.0, utils/__init__.py@0.9.2-0.11.0), its message
  adding "or in a config file"; ``--model=M`` passes;
* from 0.11.1 it moves ``--model M`` to the front as the model tag (``argv.SERVE_MODEL_HOISTED_SINCE``).

Either ValueError is a traceback on stderr and exit 1, before vLLM logs anything (stage ``cli``). The frames' line
numbers are each release's own (the releases between two read ones take the older one's).
"""

from __future__ import annotations

from collections.abc import Iterable

Version = tuple[int, int, int]
Frame = tuple[str, int, str, str]
PRE_PARSE_SINCE: Version = (0, 8, 3)
HOISTED_SINCE: Version = (0, 11, 1)
DEFAULT_MODEL = "facebook/opt-125m"  # EngineArgs.model
_SITE = "/usr/local/lib/python3.12/dist-packages/vllm"
_SCRIPT: Frame = ("/usr/local/bin/vllm", 10, "<module>", "sys.exit(main())")
#: 0.8.3-0.11.0: (entrypoints/cli/main.py's ``args = parser.parse_args()`` line, the parser's file, its raise line)
_PRE: dict[Version, tuple[int, str, int]] = {
    (0, 8, 3): (46, "utils.py", 1249), (0, 8, 5): (48, "utils.py", 1343), (0, 9, 0): (51, "utils.py", 1404),
    (0, 9, 2): (60, "utils/__init__.py", 1478), (0, 10, 0): (49, "utils/__init__.py", 1707),
    (0, 10, 1): (49, "utils/__init__.py", 1779), (0, 10, 2): (49, "utils/__init__.py", 1811),
    (0, 11, 0): (49, "utils/__init__.py", 1861),
}
#: 0.5.5-0.8.0: (``args.dispatch_function(args)`` line of the CLI's main, the raise line in ``serve``/``cmd``)
_POST: dict[Version, tuple[int, int]] = {
    (0, 5, 5): (156, 30), (0, 6, 0): (165, 30), (0, 6, 3): (195, 34), (0, 6, 5): (201, 35), (0, 7, 2): (204, 37),
    (0, 7, 3): (73, 27), (0, 8, 0): (75, 26),
}
_PRE_WORDS = ("ValueError: With `vllm serve`, you should provide the model as a positional argument or in a config "
              "file instead of via the `--model` option.")
_POST_WORDS = ("ValueError: With `vllm serve`, you should provide the model as a positional argument instead of via "
               "the `--model` option.")


def _row(table: dict[Version, tuple[int, ...]], version: Version) -> tuple[int, ...]:
    return table[max(v for v in table if v <= version)]


def before_parsing(words: Iterable[str], version: Version) -> tuple[str, tuple[Frame, ...]] | None:
    """The ValueError FlexibleArgumentParser raises on a bare ``--model`` word (0.8.3-0.11.0), else None."""
    if not PRE_PARSE_SINCE <= version < HOISTED_SINCE or "--model" not in words:
        return None
    main, where, line = _row(_PRE, version)  # type: ignore[misc]
    return _PRE_WORDS, (_SCRIPT, (f"{_SITE}/entrypoints/cli/main.py", main, "main", "args = parser.parse_args()"),
                        (f"{_SITE}/{where}", line, "parse_args", "raise ValueError("))


def after_parsing(model: str | None, version: Version) -> tuple[str, tuple[Frame, ...]] | None:
    """The ValueError ``serve`` raises for a ``--model`` other than the default (to 0.8.0), else None."""
    if version >= PRE_PARSE_SINCE or version < min(_POST) or model is None or model == DEFAULT_MODEL:
        return None
    dispatch, line = _row(_POST, version)  # type: ignore[misc]
    if version < (0, 7, 3):
        where, main, function = "scripts.py", "scripts.py", "serve"
    else:
        where, main, function = "entrypoints/cli/serve.py", "entrypoints/cli/main.py", "cmd"
    return _POST_WORDS, (_SCRIPT, (f"{_SITE}/{main}", dispatch, "main", "args.dispatch_function(args)"),
                         (f"{_SITE}/{where}", line, function, "raise ValueError("))
