"""vLLM run from `sh -c SCRIPT`: the statement that starts it, and the script forms a word-level edit cannot handle."""

from __future__ import annotations

import posixpath
import re

from vllm_remedy.errors import UserError
from vllm_remedy.vllm.cmdline import parse, shell
from vllm_remedy.vllm.cmdline.parse import Entrypoint, Token

_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ash", "ksh"})
_PASSTHROUGH = frozenset({"$@", "$*", "${@}", "${*}"})
# A script that names vLLM this way somewhere it cannot be edited word by word is refused, not guessed at.
_VLLM_MENTION = re.compile(r"\bvllm(\s+serve\b|[./]entrypoints\b)")
_INDIRECT = frozenset({"eval", "source", ".", "su", "sudo", "xargs"})
_SUBSTITUTION = re.compile(r"\$\(|`|[<>]\(")
_MULTI_DIGIT_FD = re.compile(r"^(\d{2,})[<>]")
_ANSI_C_SHELLS = frozenset({"bash", "zsh", "ksh"})
# `name() {`, `name () {`, `function name {` / `function name() {`: the `{` opening a function body.
_FUNCTION = re.compile(r"(?:^|[\s;&|(])(?:function\s+[A-Za-z_][\w-]*(?:\s*\(\s*\))?|[A-Za-z_][\w-]*\s*\(\s*\))\s*\{")


class UnsafeScriptError(UserError):
    """A shell script runs vLLM in a form a word-level edit cannot handle safely; the reason is the message."""


def script_index(values: list[str]) -> int | None:
    """Index of the `-c` script in argv like `sh -c SCRIPT` / `tini -- /bin/bash -lc SCRIPT`, else None."""
    start = parse.skip_prefix(values)
    if start >= len(values) or posixpath.basename(values[start]) not in _SHELLS:
        return None
    i = start + 1
    while i < len(values) and values[i].startswith("-"):
        opt = values[i]
        if opt in ("-o", "+o"):
            i += 2
            continue
        if not opt.startswith("--") and "c" in opt[1:]:
            return i + 1 if i + 1 < len(values) else None
        i += 1
    return None


def vllm_statement(tokens: list[Token], idx: int) -> tuple[Entrypoint, list[Token], Token] | None:
    """The vLLM statement of a shell script: entrypoint, argv tokens (with `"$@"` spliced) and last argv word.

    Raises UnsafeScriptError when the script runs vLLM in a way a word-level edit could break or miss.
    """
    script = tokens[idx]
    passthrough = tokens[idx + 2 :]
    stmts = shell.statements(script.value)
    found = [(stmt, hit) for stmt in stmts if (hit := parse.entrypoint([w.value for w in stmt.words]))]
    _refuse_unsafe(script.value, stmts, len(found))
    if not found:
        return None
    (stmt, (offset, entry)), = found
    shell_name = posixpath.basename(tokens[parse.skip_prefix([t.value for t in tokens])].value)
    _refuse_shell_dependent(stmt, shell_name)
    _refuse_bash_only(script.value, stmt, shell_name)
    _refuse_unreadable(script.value, stmt)
    _refuse_reset_positionals(stmts[:stmts.index(stmt)], stmt)
    out: list[Token] = []
    for w in stmt.words[offset + entry.length :]:
        if w.value in _PASSTHROUGH:
            out.extend(passthrough)
            continue
        out.append(Token(w.value, script.field, script.index, (w.start, w.end), w.gap_start, w.raw))
    last = stmt.words[-1]
    anchor = Token(last.value, script.field, script.index, (last.start, last.end), last.gap_start, last.raw)
    return entry, out, anchor


def _refuse_unsafe(script: str, stmts: list[shell.Statement], servers: int) -> None:
    """Refuse scripts whose vLLM statement we cannot pin down: editing a guess could break the pod."""
    if servers > 1:
        raise UnsafeScriptError(f"{servers} vLLM statements")
    if not _VLLM_MENTION.search(script):
        return
    for m in _FUNCTION.finditer(script):
        brace = m.end() - 1
        if _VLLM_MENTION.search(script[brace : _function_end(script, brace)]):
            raise UnsafeScriptError("vLLM inside a shell function: its arguments come from the call")
    if any(s.heredoc for s in stmts):
        raise UnsafeScriptError("a heredoc (<<)")
    for stmt in stmts:
        words = [w.value for w in stmt.words]
        start = parse.skip_prefix(words)
        prog = posixpath.basename(words[start]) if start < len(words) else ""
        if prog in _INDIRECT or (prog in _SHELLS and script_index(words[start:]) is not None):
            raise UnsafeScriptError(f"vLLM run through {prog}")
        for w in stmt.words + stmt.redirects:
            if _SUBSTITUTION.search(w.raw) and _VLLM_MENTION.search(w.raw):
                raise UnsafeScriptError("vLLM inside a command substitution")


def _refuse_unreadable(script: str, stmt: shell.Statement) -> None:
    """Refuse a vLLM statement whose last word is a lone `\\` (sh passes it on; an edit would land after it)."""
    last = stmt.words[-1]
    if last.raw == "\\" and not script[last.end :].strip():
        raise UnsafeScriptError("the script ends in a lone backslash, which vLLM receives as an argument; "
                                "remove it")


def _refuse_reset_positionals(before: list[shell.Statement], stmt: shell.Statement) -> None:
    """Refuse `"$@"` in vLLM's statement after `set -- ...`/`set x`/`shift`: vLLM no longer gets the container's
    args after the script, and the words it gets instead are not read here (hostile review 16, G1)."""
    if not any(w.value in _PASSTHROUGH for w in stmt.words):
        return
    for st in before:
        words = [w.value for w in st.words]
        start = parse.skip_prefix(words)
        prog, args = (words[start], words[start + 1:]) if start < len(words) else ("", [])
        operands = [a for k, a in enumerate(args) if k == 0 or args[k - 1] not in ("-o", "+o")]  # `set -o pipefail`
        if prog == "shift" or (prog == "set" and any(a == "--" or not a.startswith(("-", "+")) for a in operands)):
            raise UnsafeScriptError(f"`{' '.join(words)}` before vLLM changes the positional parameters \"$@\" "
                                    "passes, which are not read here")


def _function_end(script: str, brace: int) -> int:
    """Index just past the `}` closing the function body opened at script[brace]."""
    depth = 0
    for st in shell.statements(script[brace:]):
        for w in st.words:
            depth += (w.raw == "{") - (w.raw == "}")
            if depth == 0:
                return brace + w.end
    return len(script)


def _refuse_shell_dependent(stmt: shell.Statement, shell_name: str) -> None:
    """Refuse a vLLM statement whose argv depends on the shell or lost a flag's value to a redirect.

    `--port 8000>>log`: dash (/bin/sh on Debian/Ubuntu) takes only one digit as an fd, so vLLM gets `8000`;
    bash redirects fd 8000 and vLLM gets `--port` alone. `--port 2>&1`: every shell takes the redirect out of argv
    alike, so vLLM gets `--port` without its value and argparse refuses it (``refused``: argument_refused).
    """
    for r in stmt.redirects:
        fd = _MULTI_DIGIT_FD.match(r.raw)
        if fd:
            op = r.raw[fd.end(1):]
            raise UnsafeScriptError(f"{r.raw} means an argument then a redirect to dash but a redirect of fd "
                                    f"{fd.group(1)} to bash; put a space before {op}")
    if shell_name not in _ANSI_C_SHELLS:
        for w in stmt.words:
            if "$'" in w.raw:
                raise UnsafeScriptError(f"{w.raw} is expanded by bash but not by dash (/bin/sh on Debian/Ubuntu); "
                                        "use plain '...' quotes")


#: Syntax whose meaning differs between bash and POSIX sh (dash): bash-only operators, and brace expansion.
_BASH_ONLY = (("<<<", "a here-string (<<<)"), ("<(", "process substitution <(...)"),
              (">(", "process substitution >(...)"), ("&>", "&> (dash runs the command in the background)"),
              ("|&", "|& (a bash pipe of stderr)"))
_FD_VARIABLE = re.compile(r"\{[A-Za-z_][A-Za-z0-9_]*\}[<>]")
_BRACES = re.compile(r"\{[^{}\s'\"$]*(?:,|\.\.)[^{}\s'\"$]*\}")


def _refuse_bash_only(script: str, stmt: shell.Statement, shell_name: str) -> None:
    """Refuse a vLLM statement that bash and dash read differently: `$"..."` (bash translates, dash keeps the `$`),
    unquoted brace expansion (`{a,b}`: two words to bash, one to dash), and - under sh - bash-only operators,
    which dash rejects or runs otherwise (a review found `|&`, `<<<`, `<(...)`, `&>` edited under `sh -c`)."""
    spans = [*stmt.words, *stmt.redirects]
    start, end = min(w.start for w in spans), max(w.end for w in spans)
    text = script[start:end] + script[end:end + 3].lstrip(" \t")[:2]
    for w in stmt.words:
        if '$"' in w.raw:
            raise UnsafeScriptError(f'{w.raw} is a locale-translated string to bash but "$" plus a string to dash; '
                                    "use plain quotes")
        if not w.raw.startswith(("'", '"')) and _BRACES.search(w.raw):
            raise UnsafeScriptError(f"{w.raw} is brace-expanded by bash but not by dash; quote it")
    if shell_name in _ANSI_C_SHELLS:
        return
    for token, what in _BASH_ONLY:
        if token in text:
            raise UnsafeScriptError(f"{what} is bash syntax, but the script runs under {shell_name}; use bash -c "
                                    "or POSIX syntax")
    if _FD_VARIABLE.search(text):
        raise UnsafeScriptError(f"{{name}}> file descriptors are bash syntax, but the script runs under {shell_name}")
