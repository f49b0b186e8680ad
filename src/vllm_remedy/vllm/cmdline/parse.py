"""Recognise a vLLM entrypoint in argv and parse the options after it, keeping where every token came from.

Tokens carry their origin (which list element of `command`/`args`, and the span inside it for `sh -c`
scripts) so an edit can touch exactly those bytes and nothing else.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field

from vllm_remedy.vllm.cmdline.flags import Flag, Kind, is_option, resolve

_PYTHON = re.compile(r"^python(\d+(\.\d+)?)?$")
_SERVER_MODULES = ("vllm.entrypoints.openai.api_server", "vllm.entrypoints.api_server")
_WRAPPER_MODULES = ("dynamo.vllm",)
# Leading words of a shell statement that do not change which program runs.
_PREFIX_WORDS = frozenset({"exec", "env", "nohup", "time", "then", "do", "else", "command", "{", "!"})
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
            if self.values:
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


def skip_prefix(words: list[str]) -> int:
    """Index of the program word after `exec`, `env`, `VAR=x` and similar no-op prefixes."""
    i = 0
    while i < len(words) and (words[i] in _PREFIX_WORDS or _ASSIGNMENT.match(words[i])):
        i += 1
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


def parse_options(tokens: list[Token]) -> tuple[list[Option], list[Token]]:
    """Split tokens into options (with their values) and positionals, as vLLM's argparse would."""
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
        opt = Option(flag, [tok])
        i += 1
        nxt = tokens[i].value if i < len(tokens) else None
        if flag.attached is not None:
            opt.values.append(flag.attached)
        elif flag.negated or nxt is None:
            pass
        elif flag.kind in (Kind.BOOLEAN, Kind.STORE_TRUE):
            if nxt.lower() in _BOOL_WORDS:  # legacy `--enable-chunked-prefill False`
                opt.tokens.append(tokens[i])
                opt.values.append(nxt)
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
