"""What the ``sh -c`` script of a rehearsal vLLM container does before vLLM parses its argv, as sh would.

The kubelet has expanded ``$(VAR)`` in the script's text already (``env.kubelet_expand``); sh then runs the statements
before vLLM's — ``echo "starting ..." >&2`` writes to the container's stdout or stderr, both its log — and expands
vLLM's words from its variables: the container's env plus every assignment before (``MODEL=...`` on its own line,
``export``, ``unset``), ``"$MODEL"`` one field, an unquoted ``$ARGS`` split into several (``cmdline.script_vars``,
the reading the tools use too). The script's vLLM words are rewritten to those fields, quoted, so the vLLM parse sees
what real vLLM receives — never the literal ``$MODEL``. A word this reading cannot expand (a command substitution, a
variable ``read`` or set in a loop) is refused with a line saying so, and vLLM is not started on a guess; an ``echo``
it cannot expand prints such a line instead of its text. The pod's image sets no variable the rehearsal knows of, so
a name set nowhere expands to nothing (``HOME``, ``HOSTNAME`` and ``PATH`` are the runtime's).
"""

from __future__ import annotations

import copy
import shlex
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from vllm_remedy.vllm.cmdline import parse, script_vars, shell
from vllm_remedy.vllm.cmdline.shell_script import script_index

Obj = dict[str, Any]
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_PASSTHROUGH = frozenset({"$@", "$*", "${@}", "${*}"})
_TO_LOG = frozenset({(">&", "2"), ("1>&", "2"), ("2>&", "1"), (">&", "1")})  # stdout/stderr: both the log


@dataclass(frozen=True)
class Prepared:
    """The container with its script's vLLM words as sh expands them, what the script printed first, and the
    rehearsal's refusal line when a vLLM word cannot be expanded (then vLLM does not start)."""

    container: Obj
    printed: tuple[str, ...] = ()
    refused: str | None = None


def _date(started: datetime) -> str:
    """``date``'s default output in a UTC container (``%a %b %e %H:%M:%S %Z %Y``)."""
    return started.strftime("%a %b ") + f"{started.day:2d}" + started.strftime(" %H:%M:%S UTC %Y")


def prepare(container: Obj, env: dict[str, str], pod_name: str, started: datetime) -> Prepared:
    """``container`` (kubelet-expanded, ``env`` its environment) as its shell runs the script up to vLLM."""
    words = [str(v) for key in ("command", "args") for v in (container.get(key) or [])]
    idx = script_index(words)
    if idx is None:
        return Prepared(container)
    script = words[idx]
    known = {"HOME": "/root", "HOSTNAME": pod_name, "PATH": PATH, **env}
    commands = {"date": _date(started)}
    table = script_vars.Table(script, known, unset_is_empty=True, commands=commands)
    if table.at is None:
        return Prepared(container)
    printed = tuple(line for i in table.plain if (line := _echo(script, table.stmts[i], i, known, commands)))
    stmt = table.stmts[table.at]
    hit = parse.entrypoint([w.value for w in stmt.words])
    edits: list[tuple[int, int, str]] = []
    for w in stmt.words[hit[0] if hit else 0:]:
        if w.value in _PASSTHROUGH or not script_vars.expands(w.raw):
            continue
        got = script_vars.expand(w.raw, table)
        if isinstance(got, script_vars.Unread):
            return Prepared(container, printed, f"[vllm-remedy rehearsal] sh: vLLM's argument {w.raw}: {got.why}; "
                                                "the rehearsal does not start vLLM with an argument it cannot expand "
                                                "as sh would")
        edits.append((w.start, w.end, " ".join(shlex.quote(f) for f in got)))
    for start, end, text in reversed(edits):
        script = script[:start] + text + script[end:]
    out = copy.deepcopy(container)
    n_command = len(container.get("command") or [])
    key, at = ("command", idx) if idx < n_command else ("args", idx - n_command)
    out[key][at] = script
    return Prepared(out, printed)


def _echo(script: str, st: shell.Statement, i: int, known: dict[str, str], commands: dict[str, str]) -> str | None:
    """What a top-level ``echo`` before vLLM writes to the log (None: not an echo, or written to a file)."""
    words = st.words
    if not words or words[0].value != "echo":
        return None
    ops = [(r.raw, st.redirects[k + 1].value if k + 1 < len(st.redirects) else "")
           for k, r in enumerate(st.redirects) if k % 2 == 0]
    if any(op not in _TO_LOG for op in ops):
        return None  # to a file: not the log
    table = script_vars.Table(script, known, unset_is_empty=True, commands=commands, stop=i)
    args = list(words[1:])
    while args and args[0].value in ("-n", "-e", "-E"):
        args.pop(0)
    out: list[str] = []
    for w in args:
        got = script_vars.expand(w.raw, table)
        if isinstance(got, script_vars.Unread):
            return f"[vllm-remedy rehearsal] sh: echo not run: {w.raw}: {got.why}"
        out += got
    return " ".join(out)
