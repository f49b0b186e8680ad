"""The poll loop a StatefulSet's and a LeaderWorkerSet's rollout waits share (``sts_wait``, ``lws_wait``).

Why one loop: both read their set, record its status line when it changes, succeed once rolled out, fail fast
on a crash-looping pod of the revision being rolled out (with the classified log, as the Deployment wait in
:mod:`.wait` does), stop when the set cannot move, and time out in clock seconds. Only what one poll sees
differs per kind, so each wait passes a ``look`` that reads its set once and says that as a :class:`Seen`.

With a :class:`~vllm_remedy.kube.serving.ServingGate` the loop holds a rolled-out set, as the Deployment wait does,
until every pod that serves (``Seen.servers``) and whose vLLM container has no readiness or startup probe shows
vLLM's serving line — kubelet counts such a container Ready the moment it starts — and a restart of that container
before then is a crash loop at once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from vllm_remedy.kube.client import KubeClient
from vllm_remedy.kube.health import pod_health
from vllm_remedy.kube.serving import ServingGate
from vllm_remedy.kube.wait import Clock, Crash, WaitResult, WallClock, crash_report, crashing_container, restarted_early

BLOCKED = "blocked"


@dataclass(frozen=True)
class Seen:
    """One poll of a set: its status line ("" when it has none), the message once rolled out (None before), the
    pods checked for a crash loop, why the set cannot move by itself (None when it can), and the pods that serve
    HTTP (None: all of ``fresh``; an LWS's leaders only — a worker's vLLM never prints a serving line)."""

    status: str
    rolled_out: str | None
    fresh: list[dict[str, Any]] = field(default_factory=list)
    blocked: str | None = None
    servers: list[dict[str, Any]] | None = None


def poll_set(client: KubeClient, namespace: str, what: str, look: Callable[[], Seen], *, timeout: float,
             clock: Clock | None, interval: float, restart_limit: int, fetch_log: bool,
             unschedulable_grace: float | None = None, gate: ServingGate | None = None) -> WaitResult:
    """Poll ``look`` until rolled out, a crash loop, blocked, or ``timeout`` clock seconds; ``what`` names the set in
    the timeout message (``statefulset "web"``). With ``unschedulable_grace``, a pod of the revision rolled out that
    stays Unschedulable that long fails the wait with the scheduler's reason, as the Deployment wait does: no GPU
    frees itself while we wait, and a 900 s timeout saying "Waiting for 1 pods" tells the operator nothing. With a
    ``gate``, a rolled-out set waits for its probe-less vLLM pods to serve (module docstring)."""
    clock = clock or WallClock()
    start = clock.now()
    statuses: list[str] = []
    pending: dict[str, float] = {}

    def done(ok: bool, outcome: str, message: str, crash: Any = None) -> WaitResult:
        return WaitResult(ok, outcome, message, clock.now() - start, crash, statuses)

    while True:
        seen = look()
        if seen.status and (not statuses or statuses[-1] != seen.status):
            statuses.append(seen.status)
        servers = seen.fresh if seen.servers is None else seen.servers
        held = gate.waiting(servers) if gate is not None and seen.rolled_out is not None else []
        if seen.rolled_out is not None and not held:
            said = f"{seen.rolled_out} ({gate.NOTE})" if gate is not None and gate.used else seen.rolled_out
            return done(True, "rolled-out", said)
        for pod in seen.fresh:
            health = pod_health(pod)
            bad = crashing_container(health, restart_limit)
            if bad is not None:
                crash = crash_report(client, namespace, health, bad, fetch_log)
                return done(False, "crash-loop", crash.message, crash)
        if unschedulable_grace is not None:
            now = clock.now()
            for pod in seen.fresh:
                health = pod_health(pod)
                if not health.unschedulable:
                    pending.pop(health.name, None)
                elif now - pending.setdefault(health.name, now) >= unschedulable_grace:
                    return done(False, "unschedulable", f"pod {health.name}: Unschedulable: {health.unschedulable}",
                                Crash(pod=health.name, kind="unschedulable", message=health.unschedulable))
        early = restarted_early(client, namespace, gate, servers)
        if early is not None:
            return done(False, "crash-loop", early.message, early)
        if seen.blocked is not None:
            return done(False, BLOCKED, seen.blocked)
        if clock.now() - start >= timeout:
            why = f"{gate.NOTE}, none yet from pod(s) {', '.join(held)}" if gate is not None and held else \
                seen.status.strip()
            return done(False, "timeout", f"timed out waiting for {what}: {why}")
        clock.sleep(interval)
