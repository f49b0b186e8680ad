"""A host refused while changes are detected plans nothing more: what ``--dry`` and the prompt show is what ``-y`` runs.

pyinfra detects every operation's changes before it executes any. With ``-y`` a host fails at the operation that
refuses and its later operations never run. While detecting, each later body would still run — planning on a state
the run never reaches — and pyinfra would count what it yields as changes: a ``--dry`` listing a flag change and a
rollout wait that ``-y`` never makes. So the first refusal per run and host is remembered here (:func:`record`) and
the host's later operations are not planned. pyinfra asks ``State.should_check_for_changes()`` before it runs an
operation body to detect its changes; the gate :func:`record` installs on the run's State answers False for a
refused host — no body runs, no change is counted (the ``-`` of pyinfra's table), exactly what ``-y`` executes for
it — and prints one ``not run:`` line naming the refusal. Every operation of every deploy is covered, ours or not,
without each body having to ask.

Every refusal also marks the host failed (under pyinfra's CLI): ``--dry`` exits 1 exactly when ``-y`` would fail at
a refusal — an operation's own ``refuse`` (a change predicted not to fit, leader and workers disagreeing, a kind a
deploy does not handle) as much as a write the GitOps stance refuses. CI and the Alertmanager responder run ``--dry``
and read its exit status as what ``-y`` would do. The host is only added to ``failed_hosts`` (what pyinfra's exit
reads), not deactivated: with a prompt it still runs, and fails at the refusal as shown. ``vllm-remedy drift`` runs
bodies in-process and reads :func:`refusal` instead: its report says "fix refused", never "would change".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyinfra
from pyinfra import logger
from pyinfra.context import ctx_host


@dataclass(frozen=True)
class Refusal:
    """The first refusal of a host in a run: the operation that refused and why (one line)."""

    operation: str
    op_hash: str
    reason: str


#: (run, host) → the host's first refusal while changes were detected.
_REFUSED: dict[tuple[int, str], Refusal] = {}
_GATED = "_vllm_remedy_refusal_gate"


def _state(state: Any, host: Any) -> Any:
    """The real State (inside an operation body ``state`` is pyinfra's context proxy)."""
    return getattr(host, "state", None) or state


def op_name(state: Any, op_hash: str | None) -> str:
    """An operation's name as pyinfra's tables print it (its ``name=``), else its hash."""
    meta = getattr(state, "op_meta", {}).get(op_hash) if op_hash else None
    names = sorted(getattr(meta, "names", ()) or ())
    return names[0] if names else str(op_hash or "operation")


def record(state: Any, host: Any, reason: str) -> None:
    """While detecting changes: ``host`` is refused by the operation being planned (``reason``, one line). Its later
    operations are not planned, and under pyinfra's CLI the host is marked failed, so ``--dry`` exits 1 as ``-y``
    will (drift, in-process, reports the refusal itself)."""
    real = _state(state, host)
    if real is None or real.is_executing:
        return
    key = (id(real), str(host.name))
    if key not in _REFUSED:
        op_hash = str(getattr(host, "current_op_hash", None) or "")
        _REFUSED[key] = Refusal(op_name(real, op_hash), op_hash, " ".join(str(reason).split()))
    fails_later(real, host)
    _install(real)


def fails_later(state: Any, host: Any) -> None:
    """While detecting changes: a step ``-y`` will reach fails there (a wait on pods nothing in this run replaces
    or unblocks), so under pyinfra's CLI the host is marked failed now and ``--dry`` exits 1 as ``-y`` will. Not a
    refusal: the host's operations are all still planned, and a prompted run still runs them (its writes too)."""
    real = _state(state, host)
    if real is None or real.is_executing or not pyinfra.is_cli:
        return
    real.failed_hosts.add(ctx_host.get() if ctx_host.isset() else host)  # the Host itself, not the proxy


def refusal(state: Any, host: Any) -> Refusal | None:
    """The host's refusal in this run while changes were detected, if any."""
    return _REFUSED.get((id(_state(state, host)), str(host.name)))


def refused_here(state: Any, host: Any) -> Refusal | None:
    """The host's refusal when the operation being planned (or executed) is the one that refused."""
    said = refusal(state, host)
    current = str(getattr(host, "current_op_hash", None) or "")
    return said if said is not None and current and said.op_hash == current else None


def _install(state: Any) -> None:
    """Wrap the run's ``should_check_for_changes`` once: False, with a ``not run:`` line, for a refused host."""
    if getattr(state, _GATED, False):
        return
    check: Callable[[], bool] = state.should_check_for_changes

    def gate() -> bool:
        if not check():
            return False
        if state.is_executing or not ctx_host.isset():
            return True
        host = ctx_host.get()
        said = _REFUSED.get((id(state), str(host.name)))
        if said is None:
            return True
        order = getattr(host, "op_hash_order", None) or [None]  # pyinfra appended the operation being added
        logger.info(f"{host.print_prefix}not run: {op_name(state, order[-1])} — the host stops at the refusal of "
                    f"{said.operation!r} above, as a -y run does")
        return False

    state.should_check_for_changes = gate
    setattr(state, _GATED, True)


def forget(run: int) -> None:
    """Drop one run's refusals (the Python API reuses the process)."""
    for key in [k for k in _REFUSED if k[0] == run]:
        del _REFUSED[key]
