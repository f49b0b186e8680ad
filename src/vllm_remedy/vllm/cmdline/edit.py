"""Set and unset vLLM flags in a container spec, changing only the tokens that must change.

The form is preserved: list layout, `=` or space style, quoting, the flag's own spelling, and in `sh -c`
scripts every byte outside the vLLM statement. Duplicates of an edited flag collapse to the last one
(the one argparse honours), so the result has one unambiguous value.
"""

from __future__ import annotations

import copy
import re
from collections import defaultdict
from collections.abc import Collection
from typing import Any, Protocol

from vllm_remedy.errors import UserError
from vllm_remedy.vllm.cmdline import flags as F
from vllm_remedy.vllm.cmdline import shell
from vllm_remedy.vllm.cmdline.flags import Kind
from vllm_remedy.vllm.cmdline.parse import Option, Token
from vllm_remedy.vllm.cmdline.table import LEGACY_OPTIONAL_BOOLEAN

_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")


class ParsedCommand(Protocol):
    """What editing reads of a parsed server command.

    :class:`~vllm_remedy.vllm.cmdline.command.ServerCommand` satisfies it; naming the fields here
    instead of importing that class keeps command → edit one way (its ``edit()`` calls us).
    """

    @property
    def container_name(self) -> str: ...
    @property
    def container(self) -> dict[str, Any]: ...
    @property
    def options(self) -> list[Option]: ...
    @property
    def model_token(self) -> Token | None: ...
    @property
    def anchor(self) -> Token | None: ...
    @property
    def end_of_options(self) -> Token | None: ...
    @property
    def positionals(self) -> list[Token]: ...


class _Plan:
    """Token-level changes: replace a token by new words, delete it (with its gap), insert words after or before it."""

    def __init__(self) -> None:
        self.replace: dict[Token, list[str]] = {}
        self.delete: set[Token] = set()
        self.after: dict[Token, list[list[str]]] = defaultdict(list)
        self.before: dict[Token, list[str]] = {}

    def drop(self, opt: Option) -> None:
        """Delete one occurrence, flag and value: an unset flag, or a duplicate collapsing to the last."""
        self.delete.update(opt.tokens)


def _bool_words(name: str, value: bool) -> list[str] | None:
    """Words for a boolean state; None means "remove the flag" (false and absent-means-false)."""
    if value:
        return [f"--{name}"]
    if F.off_by_default(name) or not F.has_no_form(name):
        return None
    return [f"--no-{name}"]


def _normalise(key: str, value: str | None) -> tuple[str, str | None]:
    if not key or not _KEY.match(key.lstrip("-")):
        raise UserError(f"{key or '(empty)'}: not a flag name (expected e.g. max-model-len)")
    name = F.canonical_key(key)
    if value is not None and F.is_boolean(name):
        low = value.strip().lower()
        if low not in ("true", "false"):
            raise UserError(f"{name}: boolean flag takes true or false, got {value!r}")
        value = low
    return name, value


def _set_value(plan: _Plan, opt: Option, value: str, in_shell: bool) -> None:
    """Rewrite one occurrence's value in place, keeping `=`/space style, spelling and quoting."""
    flag_tok = opt.tokens[0]
    if opt.flag.attached is not None:
        raw = flag_tok.raw if flag_tok.raw is not None else flag_tok.value
        head = "-O" if opt.flag.spelled == "-O" and not raw.startswith("-O=") else opt.flag.spelled + "="
        if not _is_shell(flag_tok):
            plan.replace[flag_tok] = [head + value]
        elif raw.startswith(head):  # quoting (if any) covers only the value: keep it there
            plan.replace[flag_tok] = [head + shell.requote(raw[len(head):], value)]
        else:  # the whole word is quoted, e.g. '--x={"a":1}'
            plan.replace[flag_tok] = [shell.requote(raw, head + value)]
        plan.delete.update(opt.tokens[1:])
    elif len(opt.tokens) > 1:
        vtok = opt.tokens[1]
        plan.replace[vtok] = [shell.requote(vtok.raw or "", value) if _is_shell(vtok) else value]
        plan.delete.update(opt.tokens[2:])
    else:
        plan.after[flag_tok].append([shell.quote_new(value) if in_shell else value])


def _is_shell(tok: Token) -> bool:
    return tok.span is not None


def _new_words(name: str, value: str | None, eq: bool) -> list[str]:
    if value is None:
        return []
    if F.is_boolean(name):
        return _bool_words(name, value == "true") or []
    return [f"--{name}={value}"] if eq else [f"--{name}", value]


def edit_container(cmd: ParsedCommand, set_: dict[str, str], unset: list[str], drop: Collection[str] = ()
                   ) -> dict[str, Any]:
    """Apply set/unset to a parsed server command and return the new container dict; ``drop`` deletes the bare words
    written so (a stray positional argparse leaves over, ``extra``, or the word a legacy StoreBoolean flag took in
    old releases, ``--enable-chunked-prefill False``, that a newer one leaves over), never the model tag unless it is
    a misspaced flag (``"--max-model-len 16384"`` read as the tag) beside a ``--model`` that then stands."""
    plan = _Plan()
    named = any(o.name == "model" for o in cmd.options)  # then a misspaced item taken as the model tag may go too
    plan.delete.update(t for t in cmd.positionals if t.value in drop
                       and (t is not cmd.model_token or (named and F.misspaced(t.value) is not None)))
    plan.delete.update(o.tokens[1] for o in cmd.options if o.name in LEGACY_OPTIONAL_BOOLEAN and len(o.tokens) == 2
                       and o.tokens[1].value in drop)
    eq = option_style_eq(cmd.options)
    wanted = [_normalise(k, v) for k, v in set_.items()] + [_normalise(k, None) for k in unset]
    appended: list[str] = []
    anchor = cmd.anchor
    for name, value in wanted:
        if name == "model" and cmd.model_token is not None:
            if value is None:
                raise UserError("model: cannot unset the positional model")
            tok = cmd.model_token
            if value != tok.value:
                plan.replace[tok] = [shell.requote(tok.raw or "", value) if _is_shell(tok) else value]
            continue
        occurrences = [o for o in cmd.options if o.name == name]
        if value is None:
            for o in occurrences:
                plan.drop(o)
            continue
        current = occurrences[-1].value if occurrences else None
        if current == value and len(occurrences) == 1:
            continue
        if F.is_boolean(name):
            words = _bool_words(name, value == "true")
            if words is None:
                for o in occurrences:
                    plan.drop(o)
                continue
            if not occurrences:
                appended += words
                continue
            *dups, last = occurrences
            for o in dups:
                plan.drop(o)
            if current != value or last.values:
                plan.replace[last.tokens[0]] = words
                plan.delete.update(last.tokens[1:])
            continue
        if not occurrences:
            appended += _new_words(name, value, eq)
            continue
        *dups, last = occurrences
        for o in dups:
            plan.drop(o)
        if current != value:
            _set_value(plan, last, value, in_shell=anchor is not None and _is_shell(last.tokens[0]))
    if appended:
        if anchor is None:
            raise UserError(f"container {cmd.container_name}: no argv to append flags to")
        dashes = cmd.end_of_options  # after `--` vLLM reads words as positionals, never as flags
        if dashes is not None:
            plan.before[dashes] = [" ".join(shell.quote_new(w) for w in appended)] if _is_shell(dashes) else appended
        elif _is_shell(anchor):
            plan.after[anchor].append([" ".join(shell.quote_new(w) for w in appended)])
        else:
            plan.after[anchor].append(appended)
    return _apply(cmd, plan)


def _continuation_gap(cmd: ParsedCommand, script: str) -> str:
    """The separator before the last option word of the statement (keeps `\\` line-continuation layout)."""
    shell_flags = [o.tokens[0] for o in cmd.options if _is_shell(o.tokens[0])]
    if shell_flags:
        t = shell_flags[-1]
        assert t.span is not None and t.gap_start is not None
        gap = script[t.gap_start : t.span[0]]
        if "\\\n" in gap:
            return gap
    return " "


def _apply(cmd: ParsedCommand, plan: _Plan) -> dict[str, Any]:
    new = copy.deepcopy(cmd.container)
    touched = set(plan.replace) | plan.delete | set(plan.after) | set(plan.before)
    for field_name in ("command", "args"):
        if field_name not in new or not isinstance(new[field_name], list):
            continue
        old = new[field_name]
        if not any(t.field == field_name for t in touched):
            continue
        by_index: dict[int, list[Token]] = defaultdict(list)
        for t in touched:
            if t.field == field_name:
                by_index[t.index].append(t)
        out: list[Any] = []
        for i, element in enumerate(old):
            toks = by_index.get(i, [])
            shell_toks = [t for t in toks if _is_shell(t)]
            if shell_toks:
                out.append(_splice(cmd, str(element), shell_toks, plan))
            elif toks:
                (t,) = toks
                out.extend(plan.before.get(t, []))
                if t in plan.delete:
                    pass
                elif t in plan.replace:
                    out.extend(plan.replace[t])
                else:
                    out.append(element)
                for words in plan.after.get(t, []):
                    out.extend(words)
            else:
                out.append(element)
        new[field_name] = out
    return new


def _splice(cmd: ParsedCommand, script: str, toks: list[Token], plan: _Plan) -> str:
    edits: list[tuple[int, int, str]] = []
    for t in toks:
        assert t.span is not None and t.gap_start is not None
        if t in plan.before:
            edits.append((t.span[0], t.span[0], " ".join(plan.before[t]) + " "))
        if t in plan.delete:
            edits.append((t.gap_start, t.span[1], ""))
        elif t in plan.replace:
            edits.append((t.span[0], t.span[1], " ".join(plan.replace[t])))
        for words in plan.after.get(t, []):
            sep = _continuation_gap(cmd, script) if t == cmd.anchor else " "
            edits.append((t.span[1], t.span[1], sep + " ".join(words)))
    for start, end, text in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        script = script[:start] + text + script[end:]
    return script


def option_style_eq(options: list[Option]) -> bool:
    """Whether this command mostly writes `--flag=value` (new flags follow the majority; ties use a space)."""
    valued = [o for o in options if o.flag.kind not in (Kind.BOOLEAN, Kind.STORE_TRUE) and (o.values or o.uses_eq)]
    eq = sum(1 for o in valued if o.uses_eq)
    return eq * 2 > len(valued)
