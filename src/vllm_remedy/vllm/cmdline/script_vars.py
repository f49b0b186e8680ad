"""The shell variables an ``sh -c`` script holds when it reaches its vLLM statement, and a word as sh expands it.

One reading for the tools and the rehearsal pod alike, so they agree on what vLLM receives. POSIX sh expands
``$NAME`` and ``${NAME}`` in each word (XCU 2.6.2) from the shell's variables: the environment it started with (the
container's env as the kubelet built it) and every assignment before — ``MODEL=meta-llama/x`` on its own line sets a
shell variable (2.9.1), ``export``/``readonly`` too, ``unset`` clears one. An unquoted expansion is then split into
fields at blanks (2.6.5) and matched against files (2.6.6); a double-quoted one stays one field.

Read here: assignments and ``export``/``readonly``/``unset`` in top-level statements (joined by ``;`` or newlines)
before vLLM's, their values expanded in turn; ``$NAME``, ``${NAME}``, ``${NAME:-literal}``, quotes and backslashes in
the words. Not read (the value is ``Unread``, with why): command substitutions, arithmetic, special parameters,
other ``${...}`` forms, a variable set inside a list, pipeline, subshell, conditional or loop, by ``read``, ``eval``
or ``source``, and an unquoted expansion holding a glob character (the files decide). A call of a function the script
defines runs its body in the calling shell (XCU 2.9.5), so it may set any variable: after one, every variable is
unread, as after ``eval``, a call of a name an ``alias`` defined, or a command named by an expansion (``$f``); so is
a name an arithmetic expansion (``$((X=1))``, ``$((X+=1))``), bash's ``let`` or ``${X:=v}`` assigns, wherever it
stands before vLLM or earlier in vLLM's own statement.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from vllm_remedy.vllm.cmdline import parse, shell


@dataclass(frozen=True)
class Unread:
    """A value this reading cannot know, and why (one clause)."""

    why: str


Value = str | Unread
Lookup = Callable[[str], Value]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=")
_DEFAULT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*):-([^$`'\"\\{}]*)")
_SELF_ASSIGN = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*):?=")  # `${X:=d}` assigns X as it expands
_OPEN = frozenset({"if", "case", "for", "while", "until", "select", "{", "function"})
_CLOSE = frozenset({"fi", "esac", "done", "}"})
_DECLARE = frozenset({"export", "readonly", "local", "declare", "typeset"})
_READERS = frozenset({"read", "getopts", "mapfile", "readarray", "printf"})  # `printf -v X`: bash sets X
_OPAQUE = frozenset({"eval", "source", "."})
# POSIX special built-ins: an assignment before one outlives it in sh (dash) but not in bash: shells differ
_SPECIAL = frozenset({"break", ":", "continue", ".", "eval", "exec", "exit", "export", "readonly", "return", "set",
                      "shift", "times", "trap", "unset"})
# `name()`, `name ()`, `function name`: a function the script defines (its body is not followed)
_FUNC_DEF = re.compile(r"(?:^|[\s;&|(){}])(?:function[ \t]+([A-Za-z_][\w.-]*)|([A-Za-z_][\w.-]*)[ \t]*\([ \t]*\))")
_ARITH_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ARITH_SETS = re.compile(r"\+\+|--|(?<![=!<>])=(?!=)")  # `=`, `+=`, `<<=` ..., `++`/`--` (bash, ksh)
_BLANKS = re.compile(r"([ \t\n]+)")
_GLOB = re.compile(r"[*?\[]")
_IN_CONTROL = ("it is set inside a list, pipeline, subshell, conditional or loop before vLLM, which is not followed")


def vllm_index(stmts: list[shell.Statement]) -> int | None:
    """Index of the statement that runs vLLM, else None."""
    return next((i for i, st in enumerate(stmts) if parse.entrypoint([w.value for w in st.words])), None)


def _end(st: shell.Statement) -> int:
    return max(w.end for w in (*st.words, *st.redirects))


def _start(st: shell.Statement) -> int:
    return min(w.start for w in (*st.words, *st.redirects))


def _separators(script: str, stmts: list[shell.Statement]) -> list[str]:
    """The text between statements (operators, newlines; comments dropped): ``seps[i]`` precedes statement i."""
    bounds = [0] + [_end(st) for st in stmts]
    starts = [_start(st) for st in stmts] + [len(script)]
    return [re.sub(r"#[^\n]*", "", script[bounds[i]:starts[i]]) for i in range(len(stmts) + 1)]


def _arith_assigned(raw: str) -> list[str]:
    """The names an arithmetic expansion in ``raw`` may assign (all names of one that assigns anything)."""
    names: list[str] = []
    i = raw.find("$((")
    while i >= 0:
        end = shell._expansion_end(raw, i) or len(raw)
        inner = raw[i + 3: end - 2]
        if _ARITH_SETS.search(inner):
            names += _ARITH_NAME.findall(inner)
        i = raw.find("$((", end)
    return names


def _assigning(st: shell.Statement) -> list[str]:
    """Names a statement assigns while its words expand: ``${X:=v}``, ``${X=v}``, arithmetic assignments, and
    bash's ``let X=5`` / ``let X++``."""
    words = [w.value for w in st.words]
    start = parse.skip_prefix(words)
    let = [n for a in words[start + 1:] if _ARITH_SETS.search(a) for n in _ARITH_NAME.findall(a)] \
        if start < len(words) and words[start] == "let" else []
    return [*(m.group(1) for w in st.words for m in _SELF_ASSIGN.finditer(w.raw)),
            *(n for w in (*st.words, *st.redirects) for n in _arith_assigned(w.raw)), *let]


def _touched(st: shell.Statement) -> list[str]:
    """Every variable name a statement may set (for one that is not followed)."""
    words = [w.value for w in st.words]
    names = [m.group(1) for w in words if (m := _ASSIGN.match(w))]
    start = parse.skip_prefix(words)
    prog = words[start] if start < len(words) else ""
    if prog in _DECLARE | _READERS | {"unset", "for", "select"}:
        names += [w.split("=", 1)[0] for w in words[start + 1:] if _NAME.fullmatch(w.split("=", 1)[0])]
    if prog == "getopts":
        names += ["OPTARG", "OPTIND"]
    return names + _assigning(st)


class Table:
    """The shell's variables at the vLLM statement of ``script`` (all statements when it has none)."""

    def __init__(self, script: str, env: Mapping[str, str], opaque: Mapping[str, str] | None = None, *,
                 unset_is_empty: bool = False, commands: Mapping[str, str] | None = None,
                 stop: int | None = None) -> None:
        """``env``: the container's env as known; ``opaque``: names (``*P``: any name starting with P) whose value
        cannot be read, with why; ``unset_is_empty``: a name set nowhere expands to nothing (the rehearsal pod, whose
        image sets nothing else), else it is unread (the image may set it); ``commands``: the output of the
        command substitutions a caller runs (``date``); ``stop``: the variables before that statement instead."""
        self.env, self.opaque = env, dict(opaque or {})
        self.unset_is_empty, self.commands = unset_is_empty, dict(commands or {})
        self.set: dict[str, Value] = {}
        self.everything: str | None = None  # `eval`/`source` before vLLM: any variable may have changed
        self.stmts = shell.statements(script)
        self.at = vllm_index(self.stmts)
        self.plain: list[int] = []  # the statements walked that run at the top level, in sequence
        self.functions = {a or b for a, b in _FUNC_DEF.findall(script)}  # and alias names, as they are defined
        end = stop if stop is not None else len(self.stmts) if self.at is None else self.at
        self._walk(script, self.stmts[:end])
        if stop is None and self.at is not None:  # `${X:=v} ... $X` in vLLM's statement: set as it expands
            for name in _assigning(self.stmts[self.at]):
                self.set[name] = Unread(f"vLLM's statement assigns ${name} while expanding, which is not read")

    def lookup(self, name: str) -> Value:
        """The value ``$name`` expands to at the vLLM statement."""
        if name in self.set:
            return self.set[name]
        if self.everything is not None:
            return Unread(self.everything)
        if name in self.env:
            return self.env[name]
        why = self.opaque.get(name) or next((v for k, v in self.opaque.items()
                                            if k.startswith("*") and name.startswith(k[1:])), None)
        if why is not None:
            return Unread(why)
        if self.unset_is_empty:
            return ""
        return Unread(f"${name} is set neither in the container's env nor earlier in the script (the image may set "
                      "it)")

    def _walk(self, script: str, stmts: list[shell.Statement]) -> None:
        seps = _separators(script, self.stmts)
        depth = 0
        for i, st in enumerate(stmts):
            depth += seps[i].count("(") - seps[i].count(")")
            words = [w.value for w in st.words]
            first = words[0] if words else ""
            depth += first in _OPEN
            plain = depth == 0 and not re.search(r"[|&]", seps[i] + seps[i + 1])
            depth -= first in _CLOSE
            start = parse.skip_prefix(words)
            prog = words[start] if start < len(words) else ""
            if prog == "alias":  # its names run its text where they are called, like a function
                self.functions |= {w.split("=", 1)[0] for w in words[start + 1:] if "=" in w}
            elif prog and (prog[0] in "$`" or "$(" in prog or "${" in prog):
                self._anything(f"`{' '.join(words)}` runs a command named by an expansion before vLLM (a function, "
                               "eval or . among them), which may set any variable")
            elif prog in self.functions and not re.match(r"\s*\(", seps[i + 1]):
                self._anything(f"`{' '.join(words)}` calls a function the script defines, whose body runs in the "
                               "same shell before vLLM and may set any variable")
            if plain:
                self.plain.append(i)
                self._statement(st)
                continue
            for name in _touched(st):
                self.set[name] = Unread(_IN_CONTROL)
            if start < len(words) and words[start] in _OPAQUE:
                self._anything(f"`{' '.join(words)}` runs before vLLM and may set any variable")

    def _anything(self, why: str) -> None:
        """A statement not followed may have set any variable: the values known before it are forgotten."""
        self.everything = why
        self.set.clear()

    def _statement(self, st: shell.Statement) -> None:
        words = st.words
        n = next((i for i, w in enumerate(words) if not _ASSIGN.match(w.raw)), len(words))
        prog = words[n].value if n < len(words) else ""
        if n == len(words):  # assignments only: shell variables, set in order
            for w in words:
                self._assign(w.raw)
        for name in _assigning(st):
            self.set[name] = Unread(f"`{' '.join(w.raw for w in words)}` assigns ${name} while expanding "
                                    "(${X:=...} or arithmetic), which is not read")
        if n == len(words):
            return
        if prog in _SPECIAL and n:
            for w in words[:n]:
                self.set[w.raw.split("=", 1)[0]] = Unread(f"`{w.raw} {prog}`: whether the assignment outlives a "
                                                          "special built-in differs between sh and bash")
        args = words[n + 1:]
        if prog in _DECLARE:
            for w in args:
                if _ASSIGN.match(w.raw):
                    self._assign(w.raw)
        elif prog == "unset" and not any(w.value == "-f" for w in args):
            for w in args:
                if _NAME.fullmatch(w.value):
                    self.set[w.value] = ""
        elif prog in _READERS:
            for w in args:
                if _NAME.fullmatch(w.value):
                    self.set[w.value] = Unread(f"`{prog}` sets it at run time")
            for name in ("OPTARG", "OPTIND") if prog == "getopts" else ("REPLY",) if prog == "read" else ():
                self.set[name] = Unread(f"`{prog}` sets it at run time")
        elif prog in _OPAQUE:
            self._anything(f"`{' '.join(w.value for w in words)}` runs before vLLM and may set any variable")
        elif prog == "cd":
            for name in ("PWD", "OLDPWD"):
                self.set[name] = Unread("`cd` sets it")

    def _assign(self, raw: str) -> None:
        name, value = raw.split("=", 1)
        got = expand(value, self, split=False)
        self.set[name] = got if isinstance(got, Unread) else "".join(got)


def _param(raw: str, i: int, table: Table) -> tuple[int, Value] | None:
    """The ``$`` expansion at ``raw[i]``: (end, its value); None when the ``$`` is a literal character."""
    nxt = raw[i + 1: i + 2]
    if nxt == "{":
        close = raw.find("}", i + 2)
        if close < 0:
            return len(raw), Unread(f"{raw[i:]}: an unterminated ${{")
        body = raw[i + 2: close]
        if _NAME.fullmatch(body):
            return close + 1, table.lookup(body)
        if (m := _DEFAULT.fullmatch(body)) is not None:
            got = table.lookup(m.group(1))
            return close + 1, got if isinstance(got, Unread) or got else m.group(2)
        return close + 1, Unread(f"${{{body}}} is a parameter expansion form this reading does not follow")
    if nxt == "(":
        end = shell._expansion_end(raw, i) or len(raw)
        inner = raw[i + 2: end - 1].strip()
        if not raw.startswith("$((", i) and inner in table.commands:
            return end, table.commands[inner]
        return end, Unread(f"{raw[i:end]} is a command substitution or arithmetic, which is not run")
    if (m := _NAME.match(raw, i + 1)) is not None:
        return m.end(), table.lookup(m.group(0))
    if nxt and nxt in "@*#?$!-0123456789":
        return i + 2, Unread(f"${nxt} is a special parameter")
    return None


class _Fields:
    """Fields being built (2.6.5): ``has`` when the current one exists even empty (a quoted part)."""

    def __init__(self) -> None:
        self.out: list[str] = []
        self.cur, self.has = "", False

    def text(self, text: str) -> None:
        self.cur, self.has = self.cur + text, True

    def split(self, value: str) -> Unread | None:
        for part in _BLANKS.split(value):
            if not part:
                continue
            if part[0] in " \t\n":
                if self.has:
                    self.out.append(self.cur)
                self.cur, self.has = "", False
            elif _GLOB.search(part):
                return Unread(f"it expands to {value!r} unquoted, which the shell also matches against files")
            else:
                self.text(part)
        return None


def expand(raw: str, table: Table, *, split: bool = True) -> list[str] | Unread:
    """The fields ``raw`` (one word as written in the script) becomes; ``split=False`` for an assignment's value
    (one field, no splitting or globbing)."""
    f = _Fields()
    i = 0
    while i < len(raw):
        c = raw[i]
        if c == "\\":
            if raw.startswith("\\\n", i):
                i += 2
                continue
            f.text(raw[i + 1: i + 2] or "\\")
            i += 2
        elif raw.startswith("$'", i):
            k = shell._ansi_c_end(raw, i + 2)
            f.text(shell._ansi_c_value(raw[i + 2: k]))
            i = k + 1
        elif c == "'":
            k = raw.find("'", i + 1)
            k = len(raw) if k < 0 else k
            f.text(raw[i + 1: k])
            i = k + 1
        elif c == '"':
            got = _double(raw, i + 1, table, f)
            if isinstance(got, Unread):
                return got
            i = got
        elif c == "`":
            return Unread("`...` is a command substitution, which is not run")
        elif c == "$" and (found := _param(raw, i, table)) is not None:
            i, value = found
            if isinstance(value, Unread):
                return value
            if not split:
                f.text(value)
            elif (bad := f.split(value)) is not None:
                return bad
        else:
            f.text(c)
            i += 1
    if f.has:
        f.out.append(f.cur)
    return f.out


def _double(raw: str, j: int, table: Table, f: _Fields) -> int | Unread:
    """Read a double-quoted part from ``raw[j]`` into ``f``; the index past its closing quote."""
    f.text("")
    while j < len(raw) and raw[j] != '"':
        c = raw[j]
        if c == "\\" and raw[j + 1: j + 2] in ('"', "\\", "$", "`", "\n"):
            f.text("" if raw[j + 1] == "\n" else raw[j + 1])
            j += 2
        elif c == "`":
            return Unread("`...` is a command substitution, which is not run")
        elif c == "$" and (found := _param(raw, j, table)) is not None:
            j, value = found
            if isinstance(value, Unread):
                return value
            f.text(value)
        else:
            f.text(c)
            j += 1
    return j + 1


def expands(raw: str) -> bool:
    """Whether the shell expands anything in ``raw`` (a ``$`` or backtick outside single quotes)."""
    quote = ""
    i = 0
    while i < len(raw):
        c = raw[i]
        if quote == "'":
            quote = "" if c == "'" else quote
        elif c == "\\":
            i += 1
        elif c in "$`" and raw[i:i + 2] != "$'":
            return True
        elif c == '"':
            quote = "" if quote == '"' else '"'
        elif c == "'" and not quote:
            quote = "'"
        i += 1
    return False
