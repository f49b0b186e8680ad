"""Print a change once per host and operation: a unified diff of the pod template (or HTTPRoute) plus the prediction.

Why "once": pyinfra runs an operation body twice in a prompted or ``--dry`` run — up to the first yield
while detecting changes (which is what ``--dry`` and the confirmation prompt show) and again from scratch
while executing — and only once, at execute, with ``-y`` (nothing is detected). So a line is printed the
first time its operation reaches it: while detecting in ``--dry`` and prompted runs, at execute with ``-y``
(a CronJob's log then holds the diff it applied). ``--diff`` changes nothing here.

The rule every operation follows for this to be true: **everything it shows comes before its first
yield**. pyinfra stops a detecting body at its first yielded command, so a diff shown after it would be in
a ``-y`` log but never in ``--dry`` or at the prompt — what is approved would not be what runs. Build each
write's command first (``write.template_change``, ``restore.route_change``), then yield them all.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pyinfra import logger

from vllm_remedy.kube.printable import escaped

_SHOWN: set[tuple[int, str, str, str]] = set()


def _op_key(state: Any, host: Any, topic: str) -> tuple[int, str, str, str]:
    run = id(getattr(host, "state", None) or state)  # the real State, not the context proxy
    return (run, str(host.name), str(getattr(host, "current_op_hash", None) or ""), topic)


def should_show(state: Any, host: Any, topic: str = "") -> bool:
    """True the first time this (run, host, operation, topic) may print: detection, else (``-y``) execute."""
    key = _op_key(state, host, topic)
    if key in _SHOWN:
        return False
    _SHOWN.add(key)
    return True


def show(state: Any, host: Any, lines: Iterable[str], topic: str = "", *, log: Any = None) -> bool:
    """Log ``lines`` with the host prefix once (see :func:`should_show`); returns whether it printed."""
    if not should_show(state, host, topic):
        return False
    emit = log or logger.info
    for line in lines:
        for part in _parts(str(line)):
            emit(f"{host.print_prefix}{part}")
    return True


def _parts(text: str) -> list[str]:
    """The printed lines of one shown element: split at its newlines only (a diff passed as one block), every other
    control character escaped (``vllm_remedy.kube.printable``) — ``splitlines`` also broke lines at CR, FS/GS/RS, NEL
    and the Unicode line separators, which a manifest value can hold."""
    parts = escaped(text.replace("\r\n", "\n"), newlines=False).split("\n")
    if len(parts) > 1 and parts[-1] == "":
        parts.pop()
    return parts


def note(host: Any, message: str, *, error: bool = False) -> None:
    """One line with the host prefix (errors in red by pyinfra's logger), whitespace folded."""
    text = escaped(" ".join(str(message).split()))
    (logger.error if error else logger.info)(f"{host.print_prefix}{text}")


def noop(state: Any, host: Any, reason: str) -> None:
    """Say why an operation does nothing, pyinfra's way (``[host] noop: …``) - once per run, host and operation,
    in ``--dry``, prompted and ``-y`` runs alike.

    pyinfra's own ``host.noop`` logs at debug level unless ``-v``; a remediation that silently does nothing
    at 3 a.m. reads like a broken tool, so ours is always shown.
    """
    if should_show(state, host, "noop"):
        logger.info(f"{host.print_prefix}noop: {escaped(' '.join(str(reason).split()))}")
