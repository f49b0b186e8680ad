"""A work queue and simulated-time timer heap driving every controller of one cluster on one thread.

Why one thread: controllers in real Kubernetes are level-triggered and tolerate each other's writes;
serialising them here keeps the simulation deterministic enough to test, and an idle cluster costs a
sleeping thread, not a polling loop (the benchmark requires near-zero idle CPU).
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable

from vllm_remedy.sim.clock import Clock
from vllm_remedy.sim.store import ApiError

log = logging.getLogger(__name__)

Key = tuple[str, str, str]  # (queue, namespace, name)
Handler = Callable[[str, str], None]


class Manager:
    """Deduplicating queues keyed by (queue, namespace, name) plus timers due at simulated times."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self._handlers: dict[str, Handler] = {}
        self._queue: dict[Key, None] = {}  # insertion-ordered set
        self._timers: list[tuple[float, int, Callable[[], None]]] = []
        self._requeues: dict[Key, float] = {}
        self._seq = itertools.count()
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._busy = False
        clock.on_speed_change(self._wake)

    def _wake(self) -> None:
        """The clock's speed changed: the worker's wait for the next timer was computed at the old one."""
        with self._cond:
            self._cond.notify_all()

    def register(self, queue: str, handler: Handler) -> None:
        """Controllers own named queues, so one object can be reconciled by several handlers independently
        (e.g. ``deployment`` and ``deployment-gc``)."""
        self._handlers[queue] = handler

    def enqueue(self, queue: str, namespace: str, name: str) -> None:
        """Ask for ``queue``'s handler to reconcile that object soon; safe under the store lock."""
        with self._cond:
            self._queue[(queue, namespace, name)] = None
            self._cond.notify()

    def at(self, when: float, fn: Callable[[], None]) -> None:
        """Run ``fn`` on the worker thread once the simulated clock reaches ``when``."""
        with self._cond:
            heapq.heappush(self._timers, (when, next(self._seq), fn))
            self._cond.notify()

    def after(self, sim_seconds: float, fn: Callable[[], None]) -> None:
        """A timer relative to the simulated clock, so back-offs and probe budgets scale with cluster speed."""
        self.at(self.clock.now() + sim_seconds, fn)

    def requeue_after(self, sim_seconds: float, queue: str, namespace: str, name: str) -> None:
        """Reconcile again later; one pending requeue per key (the earliest), so retries never pile up."""
        key = (queue, namespace, name)
        when = self.clock.now() + sim_seconds
        with self._cond:
            pending = self._requeues.get(key)
            if pending is not None and pending <= when:
                return
            self._requeues[key] = when

        def fire() -> None:
            with self._cond:
                if self._requeues.get(key) == when:
                    del self._requeues[key]
            self.enqueue(queue, namespace, name)

        self.at(when, fire)

    # -- the worker ------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the single worker thread (idempotent); no controller acts until it runs."""
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="sim-controllers", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop and join the worker (bounded wait); queued work stays for a later ``start``."""
        self._stop.set()
        with self._cond:
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def idle(self) -> bool:
        """No queued work and nothing running right now (timers may still be pending)."""
        with self._cond:
            return not self._queue and not self._busy

    def _next_batch(self) -> tuple[list[Key], list[Callable[[], None]]] | None:
        with self._cond:
            while not self._stop.is_set():
                now = self.clock.now()
                due: list[Callable[[], None]] = []
                while self._timers and self._timers[0][0] <= now:
                    due.append(heapq.heappop(self._timers)[2])
                if self._queue or due:
                    keys = list(self._queue)
                    self._queue.clear()
                    self._busy = True
                    return keys, due
                wait = None
                if self._timers:
                    wait = max(0.001, self.clock.real_seconds(self._timers[0][0] - now))
                self._cond.wait(timeout=wait)
            return None

    def _loop(self) -> None:
        while True:
            batch = self._next_batch()
            if batch is None:
                return
            keys, due = batch
            try:
                for fn in due:
                    self._run(fn)
                for queue, namespace, name in keys:
                    handler = self._handlers.get(queue)
                    if handler is not None:
                        self._run(lambda h=handler, ns=namespace, n=name: h(ns, n))  # type: ignore[misc]
            finally:
                with self._cond:
                    self._busy = False

    def _run(self, fn: Callable[[], None]) -> None:
        try:
            fn()
        except ApiError as err:
            if err.code not in (404, 409):  # object vanished or moved under us: the next event retries
                log.warning("controller write failed: %s", err.message)
        except Exception:  # a controller bug must not kill the cluster
            log.exception("controller failed")


def wait_until(predicate: Callable[[], bool], timeout: float, interval: float = 0.005) -> bool:
    """Poll ``predicate`` for up to ``timeout`` real seconds; True as soon as it holds."""
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)
