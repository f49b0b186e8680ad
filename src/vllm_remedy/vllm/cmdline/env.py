"""What a container's launch command does to one environment variable before vLLM reads it.

A pod's ``env`` is only where the variable starts: `sh -c 'X=0 exec vllm serve ...'`, `unset X; exec vllm ...`,
`env -u X vllm serve`, `env -i PATH=... vllm serve` and `export X=1` all change what vLLM's own process sees. This
module reads those forms, in order, where the words say it plainly; anything else that could touch the variable
(`source`, `eval`, `set -a`, a value with an expansion, ...) makes the value unknown, with the reason.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vllm_remedy.vllm.cmdline import parse, shell

_OPAQUE = frozenset({"source", ".", "eval"})  # may set anything (the server finder refuses them next to vLLM)
_ALLEXPORT = frozenset({"-a", "allexport"})  # `set -a` / `set -o allexport`: later bare assignments are exported
# Control syntax the statement walk does not follow: `&&`/`||` lists, pipelines and `&` (each side of which may run
# in a subshell), `( )` subshells, `{ }` groups and function bodies, and the compound keywords. An export written
# inside one may or may not reach vLLM (`false && export X=1` does not, nor does `export X=1 | cat`).
_CONTROL = re.compile(r"&&|\|\||(?<![<>|])\|(?!\|)|(?<![<>&])&(?![>&])|[(){}]"
                      r"|\b(?:if|then|else|elif|fi|case|esac|for|while|until|do|done|function)\b")
_ENV_CLEAR = frozenset({"-i", "--ignore-environment", "-"})
_QUOTED = re.compile(r"[$`'\"\\]")  # a word whose text may hold `(`, `|` or `&` that are no control syntax
_COMMENT = re.compile(r"(?:^|(?<=[\s;&|()]))#[^\n]*")


@dataclass(frozen=True)
class Change:
    """One step, in launch order: ``set`` to ``value``, ``unset``, ``clear`` (`env -i`: every variable), or
    ``unknown`` (``value`` says why); ``where`` quotes the words that did it."""

    op: str
    value: str | None
    where: str


def changes(container: Mapping[str, Any], name: str) -> list[Change]:
    """The launch command's changes to ``name``, outer wrapper words first, then the `sh -c` script's statements up
    to and including vLLM's own prefix (an exec-form command has only its prefix)."""
    words = [str(v) for key in ("command", "args") for v in (container.get(key) or [])
             if isinstance(container.get(key), list)]
    start = parse.skip_prefix(words)
    out = _prefix(words[:start], name)
    if start < len(words) and posixpath.basename(words[start]) in ("sh", "bash", "dash", "zsh", "ash", "ksh"):
        script = _script(words[start:])
        if script is not None:
            return out + _statements(script, name)
    return out


def _script(words: list[str]) -> str | None:
    """The `-c` script of `sh [-opts] -c SCRIPT`, else None."""
    for i, w in enumerate(words[1:], 1):
        if not w.startswith("-"):
            return None
        if not w.startswith("--") and "c" in w[1:]:
            return words[i + 1] if i + 1 < len(words) else None
    return None


def _skeleton(before: str, seen: list[shell.Word]) -> str:
    """``before`` with every word holding a quote or an expansion made plain, and comments dropped: the `(` of
    `echo "starting $(date)"` or of `# (note)` is no subshell, only control syntax between words is."""
    out = before
    for w in sorted(seen, key=lambda w: w.start, reverse=True):
        if w.end <= len(before) and _QUOTED.search(w.raw) and w.raw not in ("{", "}"):
            out = out[:w.start] + "w" + out[w.end:]
    return _COMMENT.sub("", out)


def _statements(script: str, name: str) -> list[Change]:
    out: list[Change] = []
    seen: list[shell.Word] = []
    for stmt in shell.statements(script):
        words = [w.value for w in stmt.words]
        hit = parse.entrypoint(words)
        if hit is not None:  # vLLM's statement: its own prefix, then stop (later statements run after it)
            before = script[: stmt.words[0].start] if stmt.words else script
            if name in before and _CONTROL.search(_skeleton(before, seen)):
                return [Change("unknown", "it is set before vLLM inside a list, pipeline, subshell, conditional or "
                                          "function, which this tool does not follow", before.strip())]
            return out + _prefix(words[: hit[0]], name)
        seen += [*stmt.words, *stmt.redirects]
        out += _statement(words, name)
    return out


def _statement(words: list[str], name: str) -> list[Change]:
    """A statement before vLLM's: `export X=v`, `unset X`, a bare `X=v`, or something opaque that may touch X."""
    text = " ".join(words)
    start = parse.skip_prefix(words)
    prog = words[start] if start < len(words) else ""
    if start == len(words):  # only assignments: they set shell variables (exported ones reach vLLM)
        return [_assign(w, name, text, exported=False) for w in words if w.partition("=")[0] == name]
    if prog == "export" and "-n" in words[start + 1:]:  # `export -n X`: X stays a shell variable, not exported
        return [Change("unset", None, text)] if name in {w.partition("=")[0] for w in words[start + 1:]} else []
    if prog == "export":
        return [_assign(w, name, text, exported=True) if "=" in w else Change("set?", None, text)
                for w in words[start + 1:] if w.partition("=")[0] == name]
    if prog == "unset":
        return [Change("unset", None, text)] if name in words[start + 1:] else []
    if prog in _OPAQUE or (prog == "set" and _ALLEXPORT & set(words[start + 1:])):
        return [Change("unknown", f"`{text}` runs before vLLM and may set it", text)]
    if any(name in w for w in words[start:]):  # `X=v cmd` sets X for cmd alone: only the command's words count
        return [Change("unknown", f"`{text}` names it before vLLM starts", text)]
    return []


def _assign(word: str, name: str, text: str, exported: bool) -> Change:
    value = word.partition("=")[2]
    if "$" in value or "`" in value:
        return Change("unknown", f"`{text}` sets it to an expansion ({value})", text)
    return Change("set" if exported else "assign", value, text)


def _prefix(words: list[str], name: str) -> list[Change]:
    """`X=v`, `env [-i] [-u X] [X=v]` and other wrappers' words in front of a program."""
    out: list[Change] = []
    text = " ".join(words)
    i = 0
    while i < len(words):
        w = words[i]
        if posixpath.basename(w) == "env":
            i += 1
            while i < len(words) and words[i].startswith("-") and words[i] != "--":
                opt = words[i]
                if opt in _ENV_CLEAR:
                    out.append(Change("clear", None, text))
                elif opt in ("-u", "--unset") and i + 1 < len(words):
                    i += 1
                    if words[i] == name:
                        out.append(Change("unset", None, text))
                elif opt.startswith(("--unset=", "-u")) and opt.split("=", 1)[-1].removeprefix("-u") == name:
                    out.append(Change("unset", None, text))
                elif opt in ("-S", "--split-string") or opt.startswith("--split-string="):
                    out.append(Change("unknown", f"`{text}` splits a string into the command", text))
                i += 1
            continue
        if "=" in w and w.partition("=")[0] == name:
            out.append(_assign(w, name, text, exported=True))
        i += 1
    return out


def apply(value: str | None, steps: list[Change]) -> tuple[str | None, str | None]:
    """(the value vLLM sees, why it cannot be known) after ``steps``, starting from the pod env's ``value``."""
    for step in steps:
        if step.op == "unknown":
            return None, step.value
        if step.op in ("set", "unset", "clear"):
            value = step.value
        elif step.op == "assign":  # a bare assignment reaches vLLM only if the variable was already exported
            if value is None:
                return None, f"`{step.where}` assigns it without export (vLLM sees it only if exported)"
            value = step.value
    return value, None
