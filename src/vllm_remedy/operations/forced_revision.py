"""Host data ``revision`` / ``override`` — the operator's forced restore target — checked as every kind's restore
checks it, before any operation is planned: bad input is one line naming the host and key, exit 2, nothing changed.

A revision is a plain positive integer as typed. pyinfra hands ``--data`` values through Python's ``int()`` first,
which reads ``+1``, ``01``, `` 1`` and ``1_0`` as numbers, so the number alone cannot tell a typo (or a sign
someone meant as "one newer") from ``1``: the text on pyinfra's command line is checked instead, when it is there.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pyinfra import host, logger

from vllm_remedy.kube.history import earlier_numbers
from vllm_remedy.operations.util import k8s_host
from vllm_remedy.remedies.restore import REFUSE, RestoreDecision

#: Host data ``override`` that lets a forced revision through the evidence against it.
OVERRIDE = "evidence"
#: Host data ``override`` that lets a rollback through when only some of its pods fit (``restore_capacity``).
CAPACITY = "capacity"


def typed(key: str, argv: Sequence[str] | None = None) -> str | None:
    """The text of the last ``--data KEY=TEXT`` (or ``--data=KEY=TEXT``) on the command line, as typed (pyinfra
    keeps the last one too); None when the key came from the inventory or not at all."""
    args = list(sys.argv if argv is None else argv)
    found = None
    for i, arg in enumerate(args):
        if arg == "--data" and i + 1 < len(args):
            value = args[i + 1]
        elif arg.startswith("--data="):
            value = arg.removeprefix("--data=")
        else:
            continue
        name, eq, text = value.partition("=")
        if eq and name == key:
            found = text
    return found


def revision_problem(text: str | None, override: Any) -> str | None:
    """What is wrong with host data ``revision`` (``text``, as typed) / ``override`` before any history is read
    (None: ok). Only a plain positive integer is a revision: no sign, space, leading zero or digit separator."""
    if override not in (None, OVERRIDE, CAPACITY):
        return (f"host data override: {override!r} is not {OVERRIDE!r} (restore a forced revision despite the evidence "
                f"against it) nor {CAPACITY!r} (roll back where only some of its pods fit)")
    if text is None:
        return "host data override: only applies with --data revision=N" if override == OVERRIDE else None
    if not (text.isascii() and text.isdigit() and text == str(int(text)) and int(text) >= 1):
        return f"host data revision: {text!r} is not a revision number (a whole number >= 1)"
    return None


def checked_revision(raw: Any, history: Callable[[], Sequence[Mapping[str, Any]]],
                     decide: Callable[[int], RestoreDecision], aside: str = "") -> int | None:
    """``raw`` (host data ``revision``) as every kind's restore checks it before any operation is planned: the
    number, or None when unset; bad input → one line naming the host and key, exit 2, nothing changed.

    ``history`` reads the kind's revision rows (only when a number was given), ``decide`` is the kind's restore
    decision forced to that number (a refusal there is evidence against it), ``aside`` ends the not-in-history
    line with what the kind's rollback does to numbers."""
    said = typed("revision")
    # The typed text wins even when pyinfra's value is None: it json-loads `revision=null` to None, and reading
    # that as "no revision given" would plan the automatic rollback the operator did not ask for.
    text = said if said is not None else None if raw is None else str(raw)
    problem = revision_problem(text, host.data.get("override"))
    if problem is None and text is not None:
        rows = history()
        numbers = [int(r["number"]) for r in rows]
        renumbered = {n for r in rows for n in earlier_numbers(r.get("annotations") or {})}  # a rollback's
        if int(text) not in numbers and text not in renumbered:
            problem = (f"host data revision: {text} is not in the rollout history of {k8s_host(host).where} "
                       f"(revisions: {', '.join(map(str, numbers)) or 'none'}{aside})")
        else:
            decision = decide(int(text))
            problem = decision.reason if decision.action == REFUSE else None  # before any operation writes anything
    if problem is not None:
        logger.error(f"{host.print_prefix}{problem}")
        raise SystemExit(2)
    return None if text is None else int(text)
