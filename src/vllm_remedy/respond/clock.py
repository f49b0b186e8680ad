"""The responder's cool-down clock: the cluster's, per host — the clock the deploys stamp ``last-action-at`` in.

Why not the responder's own: every writing deploy stamps the Deployment with the API server's ``Date`` (cluster
time), and the cool-down compares that stamp with "now". Against the responder's wall clock the difference is the
skew between its node and the API server (a responder running ahead acts inside the cool-down, one behind stays
muted), and on the rehearsal cluster, whose clock runs compressed ahead of the wall, every page was skipped for
hours after any deploy (hostile review 15b, F9). The in-memory cool-down counts in the same clock, so it agrees
with the stamp it may have been released from.

:meth:`ClusterTime.read` asks the API server (one request; the dispatcher and the action threads, which may block);
:meth:`ClusterTime.guess` extrapolates from the last reading at the speed measured between readings (the webhook's
request thread, which must not block on the API server: the repeat check before routing).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Protocol

from vllm_remedy.kube.errors import KubeError


class Timed(Protocol):
    """What a clock reading needs of a client: ``KubeClient.server_time``."""

    def server_time(self) -> float: ...


#: Real seconds two readings must lie apart before their difference measures the cluster's speed.
MEASURE_AFTER = 1.0


class ClusterTime:
    """One cluster's clock as the responder knows it: read where it may block, guessed where it must not."""

    def __init__(self, real: Callable[[], float] = time.monotonic) -> None:
        self.real = real
        self._lock = threading.Lock()
        self._first: tuple[float, float] | None = None  # (real, cluster) of the first reading
        self._last: tuple[float, float] | None = None
        self._speed = 1.0

    def read(self, client: Timed) -> float:
        """The cluster's ``now`` from the API server's ``Date`` (KubeError when it does not answer)."""
        cluster = client.server_time()
        real = self.real()
        with self._lock:
            if self._first is None:
                self._first = (real, cluster)
            elif real - self._first[0] >= MEASURE_AFTER and cluster > self._first[1]:
                self._speed = max(1.0, (cluster - self._first[1]) / (real - self._first[0]))
            self._last = (real, cluster)
        return cluster

    def guess(self) -> float | None:
        """The cluster's ``now`` from the last reading and the measured speed; None before any reading."""
        with self._lock:
            if self._last is None:
                return None
            real, cluster = self._last
            return cluster + (self.real() - real) * self._speed

    def now(self, client: Timed | None) -> float | None:
        """A reading through ``client``, else (no client, no answer) the guess."""
        if client is not None:
            try:
                return self.read(client)
            except KubeError:  # a clock that cannot be read falls back to its guess, never fails a page
                pass
        return self.guess()
