"""The poll loop a StatefulSet's and a LeaderWorkerSet's rollout waits share (``sts_wait``, ``lws_wait``).

Why one loop: both read their set, record its status line when it changes, succeed once rolled out, fail fast
on a crash-looping pod of the revision being rolled out (with the classified log, as the Deployment wait in
:mod:`.wait` does), stop when the set cannot move, and time out in clock seconds. Only what one poll sees
differs per kind, so each wait passes a ``look`` that reads its set once and says that as a :class:`Seen`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from vllm_remedy.kube.client import KubeClient
from vllm_remedy.kube.health import pod_health
from vllm_remedy.kube.wait import Clock, WaitResult, WallClock, crash_report, crashing_container

BLOCKED = "blocked"


@dataclass(frozen=True)
class Seen:
    """One poll of a set: its status line ("" when it has none), the message once rolled out (None before), the
    pods checked for a crash loop, and why the set cannot move by itself (None when it can)."""

    status: str
    rolled_out: str | None
    fresh: list[dict[str, Any]] = field(default_factory=list)
    blocked: str | None = None


def poll_set(client: KubeClient, namespace: str, what: str, look: Callable[[], Seen], *, timeout: float,
             clock: Clock | None, interval: float, restart_limit: int, fetch_log: bool) -> WaitResult:
    """Poll ``look`` until rolled out, a crash loop, blocked, or ``timeout`` clock seconds; ``what`` names the set in
    the timeout message (``statefulset "web"``)."""
    clock = clock or WallClock()
    start = clock.now()
    statuses: list[str] = []

    def done(ok: bool, outcome: str, message: str, crash: Any = None) -> WaitResult:
        return WaitResult(ok, outcome, message, clock.now() - start, crash, statuses)

    while True:
        seen = look()
        if seen.status and (not statuses or statuses[-1] != seen.status):
            statuses.append(seen.status)
        if seen.rolled_out is not None:
            return done(True, "rolled-out", seen.rolled_out)
        for pod in seen.fresh:
            health = pod_health(pod)
            bad = crashing_container(health, restart_limit)
            if bad is not None:
                crash = crash_report(client, namespace, health, bad, fetch_log)
                return done(False, "crash-loop", crash.message, crash)
        if seen.blocked is not None:
            return done(False, BLOCKED, seen.blocked)
        if clock.now() - start >= timeout:
            return done(False, "timeout", f"timed out waiting for {what}: {seen.status.strip()}")
        clock.sleep(interval)
