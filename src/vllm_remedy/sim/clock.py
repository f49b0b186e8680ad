"""Simulated time: the rehearsal cluster runs ``speed`` times faster than the wall clock.

A 4-minute model load at speed 60 takes 4 real seconds. Everything in the cluster that has a notion
of time (timestamps, back-off, progress deadlines, "Ready for N minutes") reads this clock, so tests
and game days stay fast while every duration keeps its real meaning in simulated seconds.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import datetime, timezone


class Clock:
    """Simulated seconds since the epoch, advancing ``speed`` × real time from ``start``."""

    def __init__(self, speed: float = 60.0, start: float | None = None) -> None:
        if speed <= 0:
            raise ValueError("speed must be > 0")
        self.speed = speed
        self._origin_sim = time.time() if start is None else start
        self._origin_real = time.monotonic()
        self._lock = threading.Lock()
        self._on_speed: list[Callable[[], None]] = []

    def on_speed_change(self, fn: Callable[[], None]) -> None:
        """Call ``fn`` after each ``set_speed``: whoever sleeps the real time a cluster interval takes (the
        controllers' timer wait) must compute it again, or a timer fires late by the old speed's sleep."""
        self._on_speed.append(fn)

    def now(self) -> float:
        """Current simulated time, derived from the monotonic clock so a wall-clock jump never moves the
        cluster's time."""
        with self._lock:
            return self._origin_sim + (time.monotonic() - self._origin_real) * self.speed

    def set_speed(self, speed: float) -> None:
        """Run at ``speed`` from now on, without a jump: a game day may slow the cluster to watch a rollout."""
        if speed <= 0:
            raise ValueError("speed must be > 0")
        with self._lock:
            real = time.monotonic()
            self._origin_sim += (real - self._origin_real) * self.speed
            self._origin_real = real
            self.speed = speed
        for fn in list(self._on_speed):
            fn()

    def timestamp(self, at: float | None = None) -> str:
        """RFC 3339, second precision, as Kubernetes writes metadata timestamps."""
        moment = self.now() if at is None else at
        return datetime.fromtimestamp(moment, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")

    def real_seconds(self, sim_seconds: float) -> float:
        """How long ``sim_seconds`` of cluster time take on the wall clock."""
        return sim_seconds / self.speed

    def sleep(self, sim_seconds: float, stop: threading.Event | None = None) -> None:
        """Sleep for simulated seconds; returns early when ``stop`` is set."""
        delay = max(0.0, self.real_seconds(sim_seconds))
        if stop is None:
            time.sleep(delay)
        else:
            stop.wait(delay)


def parse_timestamp(value: str) -> float:
    """Seconds since the epoch for an RFC 3339 timestamp (``Z`` or an offset)."""
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
