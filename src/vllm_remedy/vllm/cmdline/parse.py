"""Recognise a vLLM entrypoint in argv and parse the options after it, keeping where every token came from.

Tokens carry their origin (which list element of `command`/`args`, and the span inside it for `sh -c`
scripts) so an edit can touch exactly those bytes and nothing else.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from vllm_remedy.vllm.cmdline.booleans import store_boolean
from vllm_remedy.vllm.cmdline.flags import Flag, Kind, in_release, is_option, resolve
from vllm_remedy.vllm.cmdline.table import LEGACY_OPTIONAL_BOOLEAN

_PYTHON = re.compile(r"^python(\d+(\.\d+)?)?$")
_SERVER_MODULES = ("vllm.entrypoints.openai.api_server", "vllm.entrypoints.api_server")
_WRAPPER_MODULES = ("dynamo.vllm",)
# Leading words of a shell statement that do not change which program runs.
_PREFIX_WORDS = frozenset({"exec", "nohup", "time", "then", "do", "else", "command", "{", "!"})
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_BOOL_WORDS = {"true": "true", "false": "false"}


@dataclass(frozen=True)
class Token:
    """One argv word and where it lives: ``field``[``index``], and ``span`` within that string for scripts."""

    value: str
    field: str
    index: int
    span: tuple[int, int] | None = None
    gap_start: int | None = None
    raw: str | None = None


@dataclass
class Option:
    """One occurrence of a flag with the tokens it consumed (flag token first)."""

    flag: Flag
    tokens: list[Token]
    values: list[str] = field(default_factory=list)
    # a StoreBoolean given the next word, not true/false (``vllm serve --enable-chunked-prefill MODEL``): vLLM raises
    # (``refused.store_boolean_value``); ``value`` is then its const "true", what the advised fixes give
    raises: bool = False

    @property
    def name(self) -> str:
        """The canonical flag name, the key of ``ServerCommand.flags``."""
        return self.flag.name

    @property
    def value(self) -> str:
        """Effective value as a string: booleans "true"/"false", multi-values space-joined."""
        if self.flag.kind in (Kind.BOOLEAN, Kind.STORE_TRUE):
            if self.flag.negated:
                return "false"
            if self.values and not self.raises:
                return _BOOL_WORDS.get(self.values[0].lower(), self.values[0])
            return "true"
        if not self.values and self.flag.kind in (Kind.OPTIONAL, Kind.UNKNOWN):
            return "true"
        return " ".join(self.values)

    @property
    def uses_eq(self) -> bool:
        """Written `--flag=value`: an edit keeps that style."""
        return self.flag.attached is not None


@dataclass(frozen=True)
class Entrypoint:
    """The program part of argv: its label, how many words it spans, and whether a positional model is legal."""

    label: str
    length: int
    positional_model: bool


@dataclass(frozen=True)
class _Wrapper:
    """How a launcher that runs another program parses its own argv before that program's name.

    ``values``: options that take the next word as their value (`-n 5`); ``positionals``: words after
    the options that are not the program (timeout's duration, taskset's mask); ``assignments``: `X=1`
    words are its own (env). A wrapper whose option changes how the rest is read (`env -S`) stops the search.
    """

    values: frozenset[str] = frozenset()
    positionals: int = 0
    assignments: bool = False
    stops: frozenset[str] = frozenset()


_UV_RUN_VALUES = frozenset({
    "--with", "--with-editable", "--with-requirements", "--python", "-p", "--directory", "--project", "--package",
    "--extra", "--group", "--only-group", "--no-group", "--env-file", "--index", "--index-url", "--default-index",
    "--extra-index-url", "--find-links", "-f", "--index-strategy", "--keyring-provider", "--resolution",
    "--prerelease", "--exclude-newer", "--link-mode", "--config-setting", "-C", "--cache-dir", "--config-file",
    "--color", "--refresh-package", "--reinstall-package", "--upgrade-package", "-P", "--no-binary-package",
    "--no-build-package", "--python-platform", "--allow-insecure-host", "--exclude-newer-package", "-w",
})
# Well-known launchers seen in front of vLLM (init shims, NUMA/CPU pinning, priority, time limits, uv).
_WRAPPERS: dict[str, _Wrapper] = {
    "tini": _Wrapper(values=frozenset({"-e", "-p"})),
    "dumb-init": _Wrapper(values=frozenset({"-r", "--rewrite"})),
    "numactl": _Wrapper(values=frozenset({
        "-C", "--physcpubind", "-N", "--cpunodebind", "-m", "--membind", "-p", "--preferred", "-i", "--interleave",
        "-P", "--preferred-many", "-w", "--weighted-interleave"})),
    "env": _Wrapper(values=frozenset({"-u", "--unset", "-C", "--chdir"}), assignments=True,
                    stops=frozenset({"-S", "--split-string"})),
    "timeout": _Wrapper(values=frozenset({"-k", "--kill-after", "-s", "--signal"}), positionals=1),
    "nice": _Wrapper(values=frozenset({"-n", "--adjustment"})),
    "ionice": _Wrapper(values=frozenset({"-c", "--class", "-n", "--classdata"})),
    "taskset": _Wrapper(positionals=1),
    "stdbuf": _Wrapper(values=frozenset({"-i", "-o", "-e"})),
    "uv run": _Wrapper(values=_UV_RUN_VALUES),
}


def _wrapper_at(words: list[str], i: int) -> tuple[_Wrapper, int] | None:
    """The wrapper whose name is at words[i] and how many words its name takes (`uv run` is two)."""
    prog = posixpath.basename(words[i])
    if prog == "uv" and i + 1 < len(words) and words[i + 1] == "run":
        return _WRAPPERS["uv run"], 2
    found = _WRAPPERS.get(prog)
    return (found, 1) if found else None


def _skip_wrapper(words: list[str], i: int, wrapper: _Wrapper) -> int | None:
    """Index of the program word after a wrapper's options (i is just past its name); None if unreadable."""
    positionals = wrapper.positionals
    while i < len(words):
        w = words[i]
        if w == "--":
            i += 1
            break
        if w.startswith("-") and len(w) > 1:
            head = w.partition("=")[0]
            if head in wrapper.stops or (not w.startswith("--") and w[:2] in wrapper.stops):
                return None
            takes = head in wrapper.values and "=" not in w and (w.startswith("--") or len(w) == 2)
            i += 2 if takes else 1
            continue
        if wrapper.assignments and _ASSIGNMENT.match(w):
            i += 1
            continue
        if positionals:
            positionals -= 1
            i += 1
            continue
        break
    return i if i < len(words) else None


def skip_prefix(words: list[str]) -> int:
    """Index of the program word after `exec`, `VAR=x`, and wrappers like `env -u X`, `tini --`, `uv run`."""
    i = 0
    while i < len(words):
        if words[i] in _PREFIX_WORDS or _ASSIGNMENT.match(words[i]):
            i += 1
            continue
        found = _wrapper_at(words, i)
        if found is None:
            break
        nxt = _skip_wrapper(words, i + found[1], found[0])
        if nxt is None:
            break
        i = nxt
    return i


def entrypoint(words: list[str]) -> tuple[int, Entrypoint] | None:
    """Find a vLLM server (or a known vLLM wrapper) at the start of ``words``: (offset, entrypoint)."""
    start = skip_prefix(words)
    w = words[start:]
    if not w:
        return None
    prog = posixpath.basename(w[0])
    if prog == "vllm" and len(w) > 1 and w[1] == "serve":
        return start, Entrypoint(f"{w[0]} serve", 2, True)
    if not _PYTHON.match(prog):
        return None
    i = 1
    while i < len(w) and w[i].startswith("-") and w[i] != "-m":
        i += 2 if w[i] in ("-W", "-X") else 1
    if i + 1 < len(w) and w[i] == "-m":
        module = w[i + 1]
        label = " ".join(w[: i + 2])
        if module in _SERVER_MODULES:
            return start, Entrypoint(label, i + 2, False)
        if module == "vllm.entrypoints.cli.main" and i + 2 < len(w) and w[i + 2] == "serve":
            return start, Entrypoint(label + " serve", i + 3, True)
        if module in _WRAPPER_MODULES:
            return start, Entrypoint(label, i + 2, False)
        return None
    if i < len(w) and w[i].endswith(".py") and "vllm" in w[i]:
        return start, Entrypoint(" ".join(w[: i + 1]), i + 1, False)
    return None


#: From 0.11.1 ``FlexibleArgumentParser.parse_args`` moves ``vllm serve``'s ``--model M`` (the exact word, or
#: ``--model=M``) to the front as its model tag (utils/__init__.py@0.11.1, utils/argparse_utils.py@0.12.0 l.187-221):
#: ``--model`` then names the model and every bare word is left over.
MODEL_HOISTED_SINCE = (0, 11, 1)


def model_hoisted(label: str, words: Iterable[str], version: tuple[int, int, int]) -> bool:
    """Whether vLLM ``version``'s ``vllm serve`` (``label``: the entrypoint's, the image's default from 0.11.1 too)
    takes its model tag from ``--model`` among ``words`` (the argv after the entrypoint)."""
    return (version >= MODEL_HOISTED_SINCE and (label.endswith(" serve") or label == "image default")
            and any(w == "--model" or w.startswith("--model=") for w in words))


def parse_options(tokens: list[Token], version: tuple[int, int, int] | None = None
                  ) -> tuple[list[Option], list[Token]]:
    """Split tokens into options (with their values) and positionals, as vLLM ``version``'s argparse would (the newest
    table's arity when None: ``flags.kind_in``)."""
    options: list[Option] = []
    positionals: list[Token] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.value == "--":
            positionals.extend(tokens[i + 1 :])
            break
        flag = resolve(tok.value)
        if flag is None:
            positionals.append(tok)
            i += 1
            continue
        flag = in_release(flag, version)
        opt = Option(flag, [tok])
        i += 1
        nxt = tokens[i].value if i < len(tokens) else None
        if flag.attached is not None:
            opt.values.append(flag.attached)
        elif flag.negated or nxt is None:
            pass
        elif flag.kind in (Kind.BOOLEAN, Kind.STORE_TRUE):
            # legacy StoreBoolean `--enable-chunked-prefill False` only: any other boolean takes no value, so the
            # word is a positional to argparse, the model tag when it comes first (`--enforce-eager true MODEL`: tag
            # "true", ``unrecognized arguments: MODEL``), else left over (``refused``). Where the release reads the
            # flag with StoreBoolean (nargs='?', no type, no choices: utils.py@0.6.5-@0.8.3,
            # engine/arg_utils.py@0.5.5-@0.6.3) argparse gives it the next word that is no option, whatever it is:
            # `--enable-chunked-prefill MODEL` takes the model, which StoreBoolean then refuses
            # (``refused.store_boolean_value``); a release that reads it without (0.8.5+) leaves even true/false to
            # the positionals. An unknown release: true/false only, as before.
            legacy = flag.name in LEGACY_OPTIONAL_BOOLEAN
            if legacy and (nxt.lower() in _BOOL_WORDS if version is None else
                           store_boolean(flag.name, version) and not is_option(nxt)):
                opt.tokens.append(tokens[i])
                opt.values.append(nxt)
                opt.raises = nxt.lower() not in _BOOL_WORDS
                i += 1
        elif flag.kind is Kind.MULTI:
            while i < len(tokens) and not is_option(tokens[i].value):
                opt.tokens.append(tokens[i])
                opt.values.append(tokens[i].value)
                i += 1
        elif flag.kind is Kind.UNKNOWN and nxt.startswith("-"):
            pass
        elif not is_option(nxt):
            opt.tokens.append(tokens[i])
            opt.values.append(nxt)
            i += 1
        options.append(opt)
    return options, positionals
