"""The cluster's clock, for every duration the runbook measures (rollout timeout, "stable for 30 minutes").

Why not ``time.time()``: the rehearsal cluster runs compressed (e.g. 600× real time), and a real
cluster's clock is the one its timestamps (``ready since``, annotations) are written in. ``now()`` is
the API server's ``Date``; ``sleep()`` waits the real time that ``seconds`` of cluster time take, learnt
from how fast the server's clock moves against ours (never less than ``min_real`` so a fast cluster is
not polled in a busy loop, never more than the asked seconds).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from vllm_remedy.kube.client import KubeClient


class ClusterClock:
    """``now()``/``sleep()`` in cluster seconds (fits ``kube.wait.Clock``)."""

    def __init__(self, client: KubeClient, *, min_real: float = 0.05,
                 real: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> None:
        self._client = client
        self._real = real
        self._sleep = sleep
        self._min_real = min_real
        self._origin: tuple[float, float] | None = None  # (real, cluster)
        self._speed = 1.0
        self._measured = False

    def now(self) -> float:
        """The API server's ``Date``, the clock ``ready since`` and our annotations are written in; each call
        after 0.2 s of real time also re-measures the speed ``sleep`` divides by."""
        cluster, real = self._client.server_time(), self._real()
        if self._origin is None:
            self._origin = (real, cluster)
        elif real - self._origin[0] > 0.2 and cluster > self._origin[1]:
            self._speed = max(1.0, (cluster - self._origin[1]) / (real - self._origin[0]))
            self._measured = True
        return cluster

    @property
    def speed(self) -> float:
        """Cluster seconds per real second, as measured so far (1.0 until measured)."""
        return self._speed

    @property
    def measured(self) -> bool:
        """Whether ``speed`` has been measured (two readings 0.2 s of real time apart)."""
        return self._measured

    def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` of cluster time. Until the speed is measured, wait only ``min_real`` slices: assuming
        1.0 made the first poll of a 600x rehearsal cluster sleep 20 cluster minutes past a Ready rollout."""
        seconds = max(seconds, 0.0)
        if not self._measured:
            self._sleep(min(seconds, self._min_real))
            return
        self._sleep(min(seconds, max(self._min_real, seconds / self._speed)))
