"""A small POSIX-shell lexer that keeps byte offsets, so a script can be patched word by word.

shlex loses positions and mangles `$(...)`, `${X:-1}` and `{{ .Tpl }}`; we need each word's exact span to
rewrite only the vLLM statement of an `sh -c` script and leave every other byte alone.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

_SEPARATORS = ";&|\n()"
_SAFE = re.compile(r"^[A-Za-z0-9_@%+=:,./-]+$")


@dataclass(frozen=True)
class Word:
    """One shell word: its span in the script, the raw text, and its value with quotes removed.

    Expansions (`$X`, `$(...)`, `${...}`, backticks, `{{...}}`) stay verbatim in ``value``: they are opaque.
    ``gap_start`` is where the whitespace before this word starts, so removing a word removes its gap too.
    """

    start: int
    end: int
    raw: str
    value: str
    gap_start: int


@dataclass(frozen=True)
class Statement:
    """Words of one simple command, split at `;`, `&&`, `||`, `|`, `&` and unescaped newlines."""

    words: tuple[Word, ...]


def _skip_nested(s: str, i: int, open_: str, close: str) -> int:
    """Index just past the `close` matching the `open_` at s[i] (quotes inside are respected)."""
    depth, j = 0, i
    while j < len(s):
        c = s[j]
        if c == "\\":
            j += 2
            continue
        if c in "'\"" and open_ != "{{":
            k = s.find(c, j + 1)
            j = len(s) if k < 0 else k + 1
            continue
        if s.startswith(open_, j):
            depth += 1
            j += len(open_)
            continue
        if s.startswith(close, j):
            depth -= 1
            j += len(close)
            if depth == 0:
                return j
            continue
        j += 1
    return len(s)


def _expansion_end(s: str, i: int) -> int | None:
    """If s[i] starts `$(`, `${`, `` ` `` or `{{`, the index just past it; else None."""
    if s.startswith("$(", i):
        return _skip_nested(s, i + 1, "(", ")")
    if s.startswith("${", i):
        return _skip_nested(s, i + 1, "{", "}")
    if s.startswith("{{", i):
        return _skip_nested(s, i, "{{", "}}")
    if s[i] == "`":
        k = i + 1
        while k < len(s) and s[k] != "`":
            k += 2 if s[k] == "\\" else 1
        return min(k + 1, len(s))
    return None


def _read_word(s: str, i: int) -> tuple[int, str]:
    """Lex one word starting at s[i]; return (end, value without quotes)."""
    out: list[str] = []
    while i < len(s):
        c = s[i]
        if c in " \t" or c in _SEPARATORS:
            break
        if c == "\\":
            if s.startswith("\\\n", i):
                break
            out.append(s[i + 1 : i + 2])
            i += 2
        elif c == "'":
            k = s.find("'", i + 1)
            k = len(s) if k < 0 else k
            out.append(s[i + 1 : k])
            i = k + 1
        elif c == '"':
            j = i + 1
            while j < len(s) and s[j] != '"':
                if s[j] == "\\" and j + 1 < len(s) and s[j + 1] in '"\\$`':
                    out.append(s[j + 1])
                    j += 2
                    continue
                end = _expansion_end(s, j) if s[j] in "$`{" else None
                if end is not None:
                    out.append(s[j:end])
                    j = end
                    continue
                out.append(s[j])
                j += 1
            i = j + 1
        else:
            end = _expansion_end(s, i) if c in "$`{" else None
            if end is not None:
                out.append(s[i:end])
                i = end
            else:
                out.append(c)
                i += 1
    return min(i, len(s)), "".join(out)


def statements(script: str) -> list[Statement]:
    """Split a script into simple commands, each a tuple of words with exact spans."""
    result: list[Statement] = []
    words: list[Word] = []
    i, gap = 0, 0
    while i < len(script):
        c = script[i]
        if c in " \t":
            i += 1
        elif script.startswith("\\\n", i):
            i += 2
        elif c in _SEPARATORS:
            if words:
                result.append(Statement(tuple(words)))
                words = []
            i += 1
            gap = i
        elif c == "#" and (i == 0 or script[i - 1] in " \t\n;&|("):
            k = script.find("\n", i)
            i = len(script) if k < 0 else k
        else:
            end, value = _read_word(script, i)
            if end == i:  # a lone separator-like char we do not model; step over it
                end = i + 1
                value = script[i]
            words.append(Word(i, end, script[i:end], value, gap))
            i = gap = end
    if words:
        result.append(Statement(tuple(words)))
    return result


def quote_new(value: str) -> str:
    """Shell text for a value we introduce: bare when safe, else single-quoted."""
    return value if _SAFE.match(value) else shlex.quote(value)


def requote(old_raw: str, value: str) -> str:
    """Shell text for ``value`` written in the same quoting style as ``old_raw`` where that stays correct."""
    if len(old_raw) >= 2 and old_raw[0] == old_raw[-1] == '"' and not re.search(r'["\\$`]', value):
        return f'"{value}"'
    if len(old_raw) >= 2 and old_raw[0] == old_raw[-1] == "'" and "'" not in value:
        return f"'{value}'"
    return quote_new(value)
