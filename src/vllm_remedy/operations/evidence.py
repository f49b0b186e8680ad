"""Record what a run saw dying on the revision's own ReplicaSet, before Events expire (runbook step 1's memory).

Every deploy that reads the pods (restore, diagnose, budget, confirm) starts with :func:`crash_recorded`: a
revision whose pods crash-loop or were OOMKilled gets ``<prefix>crashed`` on its ReplicaSet, and a known-good
mark there is withdrawn (``remedies.evidence``). The write is a JSON patch of our own annotations only, guarded
against the ReplicaSet as the plan read it (a colleague's edit at the prompt refuses it, as for every write),
idempotent (a standing record is kept as first seen), and never blocks the remediation: a failure (no RBAC patch
on replicasets, an outage, an edit since the read) is one warning line and the run goes on.

A record is a consequential write (it withdraws a known-good mark), so it too is made only as approved: at execute
after a prompt, a record the approved plan did not show — on a revision object that did not exist then, or with other
evidence than shown — is not written; one warning line says so in the words of every write that changed after
approval (``record_dying``).

    from vllm_remedy.operations import evidence

    evidence.crash_recorded(name="Record crash-looping revisions on their ReplicaSets")
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Collection, Iterator, Mapping
from typing import Any

from pyinfra import host, logger, state
from pyinfra.api import FunctionCommand, operation

from vllm_remedy.errors import UserError
from vllm_remedy.facts.events import PodEvents
from vllm_remedy.facts.history import RolloutHistory
from vllm_remedy.facts.pods import Pods
from vllm_remedy.kube.annotations import Keys
from vllm_remedy.kube.client import KubeClient
from vllm_remedy.operations.util import Change, K8sHost, change_ops, k8s_host, noop, observe, show, write_command
from vllm_remedy.operations.util.plan import approved_plan
from vllm_remedy.remedies.evidence import (
    EVENTS,
    crashes_by_revision,
    crashes_in_events,
    credible_marks,
    record_changes,
    serving_revisions,
    standing_event_crash,
)
from vllm_remedy.remedies.restore import crash_failures


def seen_dying(history: Mapping[str, Any], pods: Mapping[str, Any], container: str | None, now: float,
               stable: float) -> dict[str, dict[str, int]]:
    """ReplicaSet name → failure class → pods, for every revision with pods dying now (pure). The current
    revision also counts pods Ready between two OOMs under load (``crash_failures``' flapping rule)."""
    by_number = {int(r["number"]): r.get("replicaset") for r in history.get("revisions") or []}
    seen = crashes_by_revision(pods, container)
    current = history.get("current_revision")
    flapping = crash_failures(pods, container, now=now, stable=stable)
    if current is not None and flapping:
        merged = seen.setdefault(int(current), {})
        for kind, n in flapping.items():
            merged[kind] = max(merged.get(kind, 0), n)
    return {str(by_number[n]): dict(sorted(k.items())) for n, k in sorted(seen.items()) if by_number.get(n)}


def seen_in_events(history: Mapping[str, Any], events: list[dict[str, Any]] | None, keys: Keys, now: float,
                   pods: Mapping[str, Any]) -> dict[str, dict[str, int]]:
    """ReplicaSet name → {"unknown": back-offs} for every revision whose gone pods crash-looped by their Events and
    no later credible known-good mark supersedes it (pure; ``remedies.evidence.crashes_in_events`` weighs the
    Events): Events expire after an hour, the record does not."""
    history, _doubted = credible_marks(history, keys, now)
    rows = history.get("revisions") or []
    by_number = {int(r["number"]): r for r in rows}
    out: dict[str, dict[str, int]] = {}
    for number, crash in crashes_in_events(rows, events, now, serving_revisions(pods)).items():
        row = by_number[number]
        if standing_event_crash(keys, row.get("annotations") or {}, crash) is not None:
            out[str(row.get("replicaset"))] = {"unknown": crash.backoffs}
    return out


def record_ops(failures: dict[str, int], seen: str, keys: Keys, client: KubeClient, basis: dict[str, Any],
               at: float) -> list[dict[str, Any]]:
    """The guarded patch recording ``failures`` on the ReplicaSet ``basis`` ([] when already recorded)."""
    notes = (basis.get("metadata") or {}).get("annotations") or {}
    changes = record_changes(keys, notes, failures, at, seen)
    return change_ops(Change(annotations=changes), keys, client, basis, at) if changes else []


@operation()
def crash_recorded() -> Iterator[FunctionCommand]:
    """
    Record on each ReplicaSet whose pods crash-loop or were OOMKilled — or crash-looped and are gone, by their
    Events — that it was seen dying (failure class, cluster time), and withdraw a known-good mark there.

    The record outlives the Events (an hour) so a later ``restore`` never rolls back onto a revision already
    seen dying; nothing happens when no pod is dying or every record is already in place. Never fails the host.

    **Example:**

    .. code:: python

        evidence.crash_recorded(name="Record crash-looping revisions on their ReplicaSets")
    """
    ctx = k8s_host(host)
    history = host.get_fact(RolloutHistory)
    pods = host.get_fact(Pods)
    if history is None or pods is None:
        return
    now = ctx.client.server_time()
    dying = seen_dying(history, pods, ctx.container, now, ctx.policy.confirm.stable_for.total_seconds())
    evented = {name: failures for name, failures in seen_in_events(
        history, (host.get_fact(PodEvents) or {}).get("events"), ctx.keys, now, pods).items() if name not in dying}
    dying.update(evented)
    yield from record_dying(ctx, history, dying, evented, now, "replicasets")


def record_dying(ctx: K8sHost, history: Mapping[str, Any], dying: Mapping[str, Mapping[str, int]],
                 evented: Collection[str], now: float, resource: str) -> Iterator[FunctionCommand]:
    """The guarded record writes for ``dying`` (revision object name → failure counts) on the ``resource``
    (``replicasets``, ``controllerrevisions``) that ``history``'s rows name; names in ``evented`` were seen in gone
    pods' Events. Every kind's ``crash_recorded`` body ends here."""
    rows = {str(r.get("replicaset")): r for r in history.get("revisions") or []}
    singular = resource.removesuffix("s")
    planned: list[str] = []
    commands: list[FunctionCommand] = []
    for name, failures in dying.items():
        notes = (rows.get(name) or {}).get("annotations") or {}
        seen = EVENTS if name in evented else ""
        changes = record_changes(ctx.keys, notes, failures, now, seen)
        if not changes:
            continue
        number = (rows.get(name) or {}).get("number")
        withdraw = ctx.keys.known_good_withdrawn in changes
        what = (f"{sum(failures.values())} back-offs restarting a failed container in its gone pods' Events"
                if name in evented else ", ".join(f"{n} pod(s) {k}" for k, n in failures.items()))
        label = (f"record on {singular} {name} (revision {number}) that it was seen dying ({what})"
                 + ("; withdraw its known-good mark" if withdraw else ""))
        planned.append(label)
        path = KubeClient.object_path(ctx.namespace, resource, name)
        # the object the record is planned on: an edit after this read (at the prompt) refuses it; unreadable
        # now, the write reads it again and warns if it still cannot
        with contextlib.suppress(UserError):
            observe(state, host, path, ctx.client.request("GET", path))
        commands.append(write_command(path, functools.partial(record_ops, failures, seen, ctx.keys), label,
                                      required=False))
    approved = approved_plan(planned)
    if approved is not None:  # executing what was approved at the prompt: nothing it did not show
        commands = [c if label in approved else _unapproved(label, approved)
                    for label, c in zip(planned, commands, strict=True)]
    if planned:  # shown before the first yield: change detection (--dry, the prompt) runs the body only that far
        show(state, host, planned, topic="evidence")
        yield from commands
    else:
        noop(state, host, "no crash to record" if not dying else "every crash seen is already recorded")


def _unapproved(label: str, approved: tuple[str, ...]) -> FunctionCommand:
    """In place of a record the approved plan did not show: one warning, nothing written (a record never fails the
    host, so the remediation after it still runs, under its own check of what was approved)."""
    said = (f"warning: {label}: not recorded (what would be written changed after the plan you approved was made "
            f"(approved: {'; '.join(approved) or 'no record'}) — re-run to plan against the new state)")
    return FunctionCommand(_warn, (said,), {})


def _warn(state: Any, host: Any, line: str) -> bool:
    """FunctionCommand body: one warning line, success (the host goes on)."""
    logger.warning(f"{host.print_prefix}{' '.join(line.split())}")
    return True
