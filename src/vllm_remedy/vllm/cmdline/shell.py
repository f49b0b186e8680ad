"""A small POSIX-shell lexer that keeps byte offsets, so a script can be patched word by word.

shlex loses positions and mangles `$(...)`, `${X:-1}` and `{{ .Tpl }}`; we need each word's exact span to
rewrite only the vLLM statement of an `sh -c` script and leave every other byte alone. Redirections
(`2>&1`, `>>log`, `&>x`) are lexed as such, apart from argv, so a new flag lands after the last argv word
and never inside a redirect. (bashlex would parse more of bash, but it is GPL-3.0+; this project is Apache-2.0.)
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

_SAFE = re.compile(r"^[A-Za-z0-9_@%+=:,./-]+$")
# Control operators end a simple command (longest first).
_OPERATORS = ("&&", "||", ";;", "|&", ";", "&", "|", "(", ")", "\n")
# An optional fd (`2`, `{fd}`) and a redirection operator (longest first); the next word is its target.
_REDIRECT = re.compile(r"(?:\d+|\{[A-Za-z_][A-Za-z0-9_]*\})?(<<<|<<-|<<|&>>|&>|>>|>&|<&|>\||<>|>|<)")
_WORD_STOP = " \t;&|()<>\n"


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
    """One simple command: argv words (assignments included) apart from its redirections.

    Split at `;`, `&&`, `||`, `|`, `&`, `(`, `)` and unescaped newlines. ``redirects`` holds each operator and
    its target as words, in order; ``heredoc`` is set when one is `<<`, whose body the lexer does not follow.
    """

    words: tuple[Word, ...]
    redirects: tuple[Word, ...] = ()
    heredoc: bool = False


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
    """If s[i] starts `$(`, `${`, `<(`, `>(`, `` ` `` or `{{`, the index just past it; else None."""
    if s.startswith(("$(", "<(", ">("), i):
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


_ANSI_C_ESCAPES = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r", "t": "\t",
                   "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}
_ANSI_C_ESCAPE = re.compile(r"\\(x[0-9A-Fa-f]{1,2}|[0-7]{1,3}|.)", re.S)


def _ansi_c_end(s: str, j: int) -> int:
    """Index of the `'` closing a `$'...'` body that starts at s[j] (`\\'` does not close it)."""
    while j < len(s) and s[j] != "'":
        j += 2 if s[j] == "\\" else 1
    return min(j, len(s))


def _ansi_c_value(body: str) -> str:
    """What bash makes of a `$'...'` body: `\\n`, `\\x41`, `\\101`, `\\'` and the other C escapes decoded."""
    def one(m: re.Match[str]) -> str:
        esc = m.group(1)
        if esc[0] == "x" and len(esc) > 1:
            return chr(int(esc[1:], 16))
        if esc[0] in "01234567":
            return chr(int(esc, 8) & 0xFF)
        return _ANSI_C_ESCAPES.get(esc, "\\" + esc)
    return _ANSI_C_ESCAPE.sub(one, body)


def _read_word(s: str, i: int) -> tuple[int, str]:
    """Lex one word starting at s[i]; return (end, value without quotes)."""
    out: list[str] = []
    while i < len(s):
        c = s[i]
        if (c in _WORD_STOP and not (c in "<>" and s.startswith("(", i + 1))) or s.startswith("\r\n", i):
            break
        if c == "\\":
            if s.startswith(("\\\n", "\\\r\n"), i):
                break
            out.append(s[i + 1 : i + 2] or "\\")  # a lone `\` at the very end stays a backslash, as in sh
            i += 2
        elif s.startswith("$'", i):
            k = _ansi_c_end(s, i + 2)
            out.append(_ansi_c_value(s[i + 2 : k]))
            i = k + 1
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
            end = _expansion_end(s, i) if c in "$`{<>" else None
            if end is not None:
                out.append(s[i:end])
                i = end
            else:
                out.append(c)
                i += 1
    return min(i, len(s)), "".join(out)


class _Builder:
    """Collects the words and redirections of the statement being lexed."""

    def __init__(self) -> None:
        self.result: list[Statement] = []
        self.words: list[Word] = []
        self.redirects: list[Word] = []
        self.heredoc = False

    def close(self) -> None:
        if self.words or self.redirects:
            self.result.append(Statement(tuple(self.words), tuple(self.redirects), self.heredoc))
        self.words, self.redirects, self.heredoc = [], [], False


def statements(script: str) -> list[Statement]:
    """Split a script into simple commands, each with its argv words and redirections at exact spans."""
    b = _Builder()
    i, gap = 0, 0
    target_of: Word | None = None  # the redirection operator whose target word comes next
    while i < len(script):
        c = script[i]
        if c in " \t":
            i += 1
            continue
        if script.startswith(("\\\n", "\\\r\n"), i):
            i += 2 if script[i + 1] == "\n" else 3
            continue
        if script.startswith("\r\n", i):  # a CRLF line end: the CR is layout, kept byte for byte
            i += 1
            continue
        if c == "#":
            k = script.find("\n", i)
            i = len(script) if k < 0 else k
            continue
        redirect = None if script.startswith(("<(", ">("), i) else _REDIRECT.match(script, i)
        op = next((o for o in _OPERATORS if script.startswith(o, i)), None)
        if redirect and target_of is None:
            end = redirect.end()
            target_of = Word(i, end, script[i:end], script[i:end], gap)
            b.redirects.append(target_of)
            b.heredoc = b.heredoc or redirect.group(1) in ("<<", "<<-")
            i = gap = end
            continue
        if op and not redirect:
            b.close()
            target_of = None
            i = gap = i + len(op)
            continue
        end, value = _read_word(script, i)
        if end == i:  # a lone char we do not model (e.g. `>` right after a redirect): step over it
            end, value = i + 1, c
        word = Word(i, end, script[i:end], value, gap)
        if target_of is not None:
            b.redirects.append(word)
            target_of = None
        else:
            b.words.append(word)
        i = gap = end
    b.close()
    return b.result


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
