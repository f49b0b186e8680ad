"""A legacy ``StoreBoolean`` flag given a word other than true/false: the ValueError vLLM's parser raises, by release.

The rehearsal's own reading of the pod's argv words (not the tools' parse): read in the wheels, ``StoreBoolean``
(engine/arg_utils.py@0.5.5-@0.6.3, utils.py@0.6.5-@0.8.3) is registered with ``nargs="?"``, ``const="True"`` and no
``type`` or ``choices``, so argparse hands it the next word that is no option whatever it is (an optional's ``?``
is matched greedily, before the positionals get theirs): ``vllm serve --enable-chunked-prefill MODEL`` gives it the
model. Its ``__call__`` compares ``values.lower()`` with "true" and "false" and otherwise raises ``ValueError("Invalid
boolean value: MODEL. Expected 'true' or 'false'.")``, which argparse does not catch (only its ArgumentError): a
traceback, exit 1, while the words are consumed (an earlier option's argparse refusal comes first, and nothing after
it is read: no leftovers, no missing model tag). Flags and releases: --enable-chunked-prefill 0.5.5-0.8.3,
--disable-logprobs-during-spec-decoding 0.5.5-0.8.0, --multi-step-stream-outputs 0.6.3-0.8.3 (``store_true`` at
0.6.2, absent before; a dataclass field's BooleanOptionalAction from 0.8.5).

The frames are vLLM's (the CLI's ``parse_args`` call, ``FlexibleArgumentParser.parse_args`` handing over to argparse,
``StoreBoolean.__call__``), with each release's line numbers; CPython's argparse frames between the last two hang on
the image's Python and are not rendered.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

Version = tuple[int, int, int]
Frame = tuple[str, int, str, str]
#: [first, last+1) release whose parser reads the flag with StoreBoolean
WINDOWS: dict[str, tuple[Version, Version]] = {
    "enable-chunked-prefill": ((0, 5, 5), (0, 8, 5)),
    "disable-logprobs-during-spec-decoding": ((0, 5, 5), (0, 8, 3)),
    "multi-step-stream-outputs": ((0, 6, 3), (0, 8, 5)),
}
_SITE = "/usr/local/lib/python3.12/dist-packages/vllm"
_SCRIPT: Frame = ("/usr/local/bin/vllm", 10, "<module>", "sys.exit(main())")
#: per release read: (StoreBoolean's file, its raise line, FlexibleArgumentParser.parse_args' return line in utils.py,
#: the CLI's ``args = parser.parse_args()`` line (scripts.py to 0.7.2, entrypoints/cli/main.py from 0.7.3), the OpenAI
#: api_server module's)
_LINES: dict[Version, tuple[str, int, int, int, int]] = {
    (0, 5, 5): ("engine/arg_utils.py", 1023, 1109, 153, 474),
    (0, 6, 0): ("engine/arg_utils.py", 1047, 1114, 162, 493),
    (0, 6, 1): ("engine/arg_utils.py", 1070, 1114, 162, 529),
    (0, 6, 2): ("engine/arg_utils.py", 1100, 1143, 162, 569),
    (0, 6, 3): ("engine/arg_utils.py", 1127, 1166, 189, 582),
    (0, 6, 5): ("utils.py", 1112, 1158, 195, 706),
    (0, 6, 6): ("utils.py", 1108, 1154, 195, 771),
    (0, 7, 0): ("utils.py", 1162, 1208, 195, 896),
    (0, 7, 2): ("utils.py", 1174, 1220, 198, 908),
    (0, 7, 3): ("utils.py", 1145, 1191, 68, 988),
    (0, 8, 0): ("utils.py", 1154, 1200, 70, 1056),
    (0, 8, 3): ("utils.py", 1219, 1275, 46, 1118),
}
_NEGATIVE = re.compile(r"^-\d+$|^-\d*\.\d+$")  # argparse's _negative_number_matcher: a value, not an option


def _option_like(word: str) -> bool:
    """Whether argparse reads ``word`` as an option string (``_parse_optional``): a leading ``-``, not ``-`` alone,
    not a negative number (vLLM's parser has no option that looks like one), no space."""
    return word.startswith("-") and word != "-" and not _NEGATIVE.match(word) and " " not in word


def raised(words: Sequence[str], version: Version) -> tuple[str, str, str] | None:
    """(the flag, the ValueError line, the word it got) of the first StoreBoolean option in ``words`` (the argv after
    the entrypoint, as vLLM receives it) whose value is not true/false in release ``version``, or None. The word tells
    ``argv.first_error`` which occurrence it is: argparse raises there, after refusing any earlier option in argv."""
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if word == "--":
            return None
        head, eq, text = word.partition("=")
        name = head[2:].replace("_", "-") if head.startswith("--") else ""
        window = WINDOWS.get(name)
        if window is None or not window[0] <= version < window[1]:
            continue
        if eq:
            value = text
        elif i < len(words) and not _option_like(words[i]):
            value, i = words[i], i + 1
        else:
            continue  # const "True"
        if value.lower() not in ("true", "false"):
            return name, f"ValueError: Invalid boolean value: {value}. Expected 'true' or 'false'.", value
    return None


def frames(version: Version, module: bool) -> tuple[Frame, ...]:
    """The traceback's frames (``python -m vllm.entrypoints.openai.api_server`` when ``module``, else ``vllm serve``),
    each release's lines (a release between two read ones takes the older one's)."""
    where, raise_line, parse_line, cli_line, api_line = _LINES[max(v for v in _LINES if v <= version)]
    if module:
        head: tuple[Frame, ...] = (("<frozen runpy>", 198, "_run_module_as_main", ""),
                                   ("<frozen runpy>", 88, "_run_code", ""),
                                   (f"{_SITE}/entrypoints/openai/api_server.py", api_line, "<module>",
                                    "args = parser.parse_args()"))
    else:
        cli = "scripts.py" if version < (0, 7, 3) else "entrypoints/cli/main.py"
        head = (_SCRIPT, (f"{_SITE}/{cli}", cli_line, "main", "args = parser.parse_args()"))
    return (*head, (f"{_SITE}/utils.py", parse_line, "parse_args",
                    "return super().parse_args(processed_args, namespace)"),
            (f"{_SITE}/{where}", raise_line, "__call__", 'raise ValueError(f"Invalid boolean value: {values}. "'))
