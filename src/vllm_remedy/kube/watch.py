"""The rollout wait over WATCH streams: ``kube.wait.wait_restored``'s verdicts, a handful of requests however long.

Why: polling read the Deployment, its ReplicaSets, its pods and the clock every 2 cluster seconds — about 110
of the ~185 requests of a restore, for a rollout of two minutes. Here each of the three is listed once and then
watched from that list's resourceVersion (one long request each; a stream the server ends is resumed where it
stopped, one it expired with 410 Gone is listed again, as client-go's informers do). Each change is judged as it
arrives with the same rules as the poll (``rollout_status``, ``new_pods``, ``crashing_container``, the
unschedulable grace, the settle window), so a crash loop still fails fast with its classified log.

Every ``tick`` cluster seconds the three are listed again (a resync, as informers do: a stream that lost events —
the rehearsal cluster's event window overflows under load without a 410 — cannot hide a verdict). The clock is
the cluster's (``ClusterClock``: one request a reading): read then, when nothing happened for a tick, and at the
end; between readings a change is timed by the clock's measured speed.
A server that refuses to watch (RBAC without ``watch``) gets the poll instead.
"""

from __future__ import annotations

import contextlib
import queue
import socket
import threading
import time
from collections import Counter
from collections.abc import Mapping
from typing import Any

from vllm_remedy.kube.client import KubeClient
from vllm_remedy.kube.errors import KubeError, RolloutError
from vllm_remedy.kube.health import pod_health
from vllm_remedy.kube.selectors import selector_string
from vllm_remedy.kube.serving import NOTE, ServingGate
from vllm_remedy.kube.wait import (
    RESTART_LIMIT,
    Clock,
    Crash,
    ProgressHook,
    WaitResult,
    crash_report,
    crashing_container,
    new_pods,
    restarted_early,
    rollout_status,
    wait_restored,
)

#: Cluster seconds between resyncs, and without a change before the clock is read (timeouts, the grace).
TICK = 30.0
#: Cluster seconds between looks at an unprobed pod's log at the least (``kube.serving``; on a compressed clock the
#: look is every ``ServingGate.look`` real seconds).
LOOK_CLUSTER = 5.0
#: Real seconds a watch request may last before the server ends it and it is resumed.
STREAM_SECONDS = 300
#: A stream the server ended sooner than this (real seconds) is resumed only after a growing pause, as client-go's
#: reflector backs off a "very short watch": a server closing every stream at once must not get a request loop.
SHORT_STREAM = 1.0
SHORT_PAUSE_MAX = 5.0


class WatchLost(KubeError):
    """A watch stream that could not be kept up (after retries): the wait goes on by polling, as before watches."""


class Feed:
    """The objects of one collection (by name), listed once and kept current by a watch thread."""

    def __init__(self, client: KubeClient, path: str, query: list[tuple[str, str]], changed: queue.Queue[Any]):
        self.client, self.path, self.query, self.changed = client, path, query, changed
        self.objects: dict[str, dict[str, Any]] = {}
        self.version = ""
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.stream: Any = None

    def close(self) -> None:
        """Stop following: the open stream is closed, so no connection outlives the wait."""
        self.stop.set()
        stream = self.stream
        if stream is not None:
            with contextlib.suppress(Exception):  # closing a finished stream must never fail the wait
                _shutdown(stream)
                stream.close()

    def list(self) -> None:
        """Read the whole collection and the resourceVersion a watch resumes from."""
        answer = self.client.request("GET", self.path, query=self.query) or {}
        with self.lock:
            self.objects = {item["metadata"]["name"]: item for item in answer.get("items") or []}
            self.version = str((answer.get("metadata") or {}).get("resourceVersion") or "")

    def items(self) -> list[dict[str, Any]]:
        with self.lock:
            return list(self.objects.values())

    def start(self) -> None:
        threading.Thread(target=self._run, daemon=True, name=f"watch {self.path}").start()

    def _run(self) -> None:
        failures = short = 0
        while not self.stop.is_set():
            began = time.monotonic()
            try:
                self._follow()
                failures = 0
                short = short + 1 if time.monotonic() - began < SHORT_STREAM else 0
                if short:
                    self.stop.wait(min(SHORT_PAUSE_MAX, 0.1 * 2 ** short))
            except Exception as exc:  # a stream closed under us raises whatever urllib3 raises
                if self.stop.is_set():
                    return
                if not isinstance(exc, KubeError):
                    exc = KubeError(f"{self.client.context}: WATCH {self.path}: {type(exc).__name__}: {exc}")
                failures += 1
                transient = exc.status in (0, 410, 429) or exc.status >= 500  # 410: expired, list again
                if transient and failures < self.client.retry.attempts:
                    self.stop.wait(self.client.retry.delay(failures))  # as every other request retries it
                    with contextlib.suppress(KubeError):
                        self.list()  # what the lost stream may have missed
                    self.changed.put(self.path)
                    continue
                self.changed.put(WatchLost(str(exc), status=exc.status))  # the wait goes on by polling
                return

    def _follow(self) -> None:
        query = [*self.query, ("resourceVersion", self.version)]
        def opened(response: Any) -> None:
            self.stream = response

        for event in self.client.watch(self.path, query, seconds=STREAM_SECONDS, opened=opened):
            if self.stop.is_set():
                return
            kind, obj = event.get("type"), event.get("object") or {}
            if kind == "ERROR":
                if obj.get("code") == 410:  # expired: list again, then watch from there
                    self.list()
                    self.changed.put(self.path)
                    return
                raise KubeError(f"{self.client.context}: WATCH {self.path}: {obj.get('message') or obj}")
            meta = obj.get("metadata") or {}
            with self.lock:
                self.version = str(meta.get("resourceVersion") or self.version)
                if kind == "DELETED":
                    self.objects.pop(meta.get("name"), None)
                elif kind in ("ADDED", "MODIFIED"):
                    self.objects[meta.get("name")] = obj
            if kind != "BOOKMARK":
                self.changed.put(self.path)


class Timer:
    """The cluster clock read sparingly: ``read()`` asks it, ``guess()`` extrapolates with its measured speed."""

    def __init__(self, clock: Clock, real: Any = time.monotonic) -> None:
        self.clock, self.real = clock, real
        self.at = (real(), clock.now())

    def read(self) -> float:
        self.at = (self.real(), self.clock.now())
        return self.at[1]

    def guess(self) -> float:
        return self.at[1] + (self.real() - self.at[0]) * self.speed()

    def speed(self) -> float:
        return float(getattr(self.clock, "speed", 1.0) or 1.0)

    def due(self, cluster: float) -> bool:
        """Whether ``cluster`` seconds (in real time, by the speed known so far) passed since the last reading."""
        return self.real() - self.at[0] >= self.real_seconds(cluster)

    def real_seconds(self, cluster: float) -> float:
        """Real seconds to wait for ``cluster`` seconds; short slices until a ClusterClock has measured its speed."""
        if getattr(self.clock, "measured", True) is False:
            return 0.25
        return max(cluster, 0.0) / self.speed()


def watch_restored(client: KubeClient, namespace: str, name: str, timeout: float, clock: Clock, *,
                   progress: ProgressHook | None = None, settle: float = 0.0, tick: float = TICK,
                   restart_limit: int = RESTART_LIMIT, unschedulable_grace: float = 60.0,
                   serving: bool = False, container: str | None = None) -> WaitResult:
    """``wait_restored`` over watches: rolled out and Ready within ``timeout`` clock seconds (then ``settle`` seconds
    with no restart of a new pod), or why not. Falls back to the poll when the server will not watch. With
    ``serving``, a vLLM container (``container``, else found by argv) with no readiness or startup probe must also
    show that it serves, without a restart on the way (``kube.serving``)."""
    gate = ServingGate(client, namespace, container, now=clock.now) if serving else None
    changed: queue.Queue[Any] = queue.Queue()
    deployments = Feed(client, KubeClient.object_path(namespace, "deployments"),
                       [("fieldSelector", f"metadata.name={name}")], changed)
    feeds = {"deployment": deployments}
    try:
        deployments.list()
        head = next(iter(deployments.items()), None)
        if head is None:
            raise KubeError(f"{client.context}: deployment {namespace}/{name} not found", status=404)
        selector = [("labelSelector", selector_string((head.get("spec") or {}).get("selector")))]
        feeds["replicasets"] = Feed(client, KubeClient.object_path(namespace, "replicasets"), selector, changed)
        feeds["pods"] = Feed(client, KubeClient.object_path(namespace, "pods", group="v1"), selector, changed)
        feeds["replicasets"].list()
        feeds["pods"].list()
        for feed in feeds.values():
            feed.start()
    except KubeError as exc:
        _stop(feeds)
        if exc.status in (403, 405):  # may get and list but not watch: poll as before
            return wait_restored(client, namespace, name, timeout, clock, progress=progress, settle=settle,
                                 gate=gate)
        raise
    timer = Timer(clock)
    began = timer.at[1]
    try:
        return _judge(client, namespace, name, timeout, timer, feeds, changed, progress, settle, tick,
                      restart_limit, unschedulable_grace, gate)
    except KubeError as exc:
        if exc.status not in (403, 405) and not isinstance(exc, WatchLost):
            raise
        _stop(feeds)  # no watch (RBAC) or none that stays up (429s, 5xx): the rest of the wait polls
        left = max(timeout - (timer.read() - began), 0.0)
        return wait_restored(client, namespace, name, left, clock, progress=progress, settle=settle, gate=gate)
    finally:
        _stop(feeds)


def _stop(feeds: Mapping[str, Feed]) -> None:
    for feed in feeds.values():
        feed.close()


def _judge(client: KubeClient, namespace: str, name: str, timeout: float, timer: Timer, feeds: Mapping[str, Feed],
           changed: queue.Queue[Any], progress: ProgressHook | None, settle: float, tick: float,
           restart_limit: int, grace: float, gate: ServingGate | None = None) -> WaitResult:
    """Judge every change until a verdict; then the settle window on the same streams. With a ``gate``, Ready
    unprobed vLLM pods are looked at again every ``LOOK`` real seconds until they show they serve."""
    start = now = synced = timer.read()
    statuses: list[str] = []
    first_unschedulable: dict[str, float] = {}
    settled_from: float | None = None
    baseline: dict[tuple[str, str], int] = {}
    unread: Counter[str] = Counter()

    def done(ok: bool, outcome: str, message: str, crash: Crash | None = None) -> WaitResult:
        return WaitResult(ok, outcome, message, timer.read() - start, crash, statuses)

    while True:
        found = feeds["deployment"].items()
        if not found:
            return done(False, "timeout", f'deployment "{name}" is gone')
        dep = found[0]
        pods = new_pods(dep, feeds["replicasets"].items(), feeds["pods"].items())
        live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
        if settled_from is None:
            past_deadline = False
            try:
                text, finished = rollout_status(dep)
            except RolloutError as exc:
                if "progress deadline" not in str(exc):
                    raise
                text, finished, past_deadline = str(exc), False, True
            if not statuses or statuses[-1] != text:
                statuses.append(text)
            want = int((dep.get("spec") or {}).get("replicas") or 0)
            rolled = finished and len(live) >= want and all(pod_health(p).ready for p in live)
            held = gate.waiting(live) if rolled and gate is not None else []
            if rolled and not held:
                text = f"{text.strip()} ({gate.NOTE})\n" if gate is not None and gate.used else text
                if settle <= 0:
                    return done(True, "rolled-out", text.strip())
                now = settled_from = timer.read()
                baseline = {(h.name, c.name): c.restarts for h in map(pod_health, pods) for c in h.containers}
                statuses.append(text)
            else:
                if progress is not None:
                    progress(dep, pods, now)
                verdict = _crash(client, namespace, pods, restart_limit, grace, now, first_unschedulable,
                                 past_deadline) or restarted_early(client, namespace, gate, pods)
                if verdict is not None and _unread(verdict, unread):
                    verdict = None  # judged at the instant it died: its log may lag the status; look again
                if verdict is not None:
                    return done(False, verdict.kind, verdict.message, verdict)
                if now - start >= timeout:
                    note = gate.NOTE if gate is not None else NOTE
                    why = f"{note}, none yet from pod(s) {', '.join(held)}" if held else text.strip()
                    return done(False, "timeout", f'timed out waiting for deployment "{name}": {why}')
        if settled_from is not None:
            for health in map(pod_health, pods):
                for c in health.containers:
                    if c.restarts > baseline.get((health.name, c.name), 0) or c.crash_looping:
                        crash = crash_report(client, namespace, health, c)
                        if _unread(crash, unread):
                            continue
                        message = f"{crash.message}; it restarted {now - settled_from:.0f}s after the rollout completed"
                        return done(False, "crash-loop", message, Crash(**{**crash.__dict__, "message": message}))
            if now - settled_from >= settle:
                return done(True, "rolled-out", statuses[-1].strip())
        bound = (settled_from + settle) if settled_from is not None else start + timeout
        step = min(tick, max(bound - now, 0.0))
        if settled_from is None and gate is not None and gate.used:  # no event says "serving": look again soon
            step = min(step, max(LOOK_CLUSTER, gate.look * timer.speed()))
        now = _next(changed, timer, step)
        if timer.due(tick):  # changes kept coming: the clock is still read every tick (first: to learn its speed)
            now = timer.read()
        if now - synced >= tick and getattr(timer.clock, "measured", True) is not False:
            for feed in feeds.values():  # resync, as informers do: a stream that lost events cannot hide a verdict
                feed.list()
            now = synced = timer.read()


def _unread(crash: Crash, tries: Counter[str], limit: int = 3) -> bool:
    """A crash-loop whose log does not classify yet, seen fewer than ``limit`` times: the kubelet may record the
    death before the log is complete (the game-day observer reads again for the same reason)."""
    if crash.kind != "crash-loop" or crash.failure not in (None, "unknown"):
        return False
    tries[crash.pod] += 1
    return tries[crash.pod] < limit


def _next(changed: queue.Queue[Any], timer: Timer, cluster_seconds: float) -> float:
    """Wait for the next change (or ``cluster_seconds``); the clock time to judge it at."""
    try:
        got = changed.get(timeout=timer.real_seconds(cluster_seconds))
    except queue.Empty:
        return timer.read()
    if isinstance(got, KubeError):
        raise got
    while True:  # a burst of events is judged once
        try:
            more = changed.get_nowait()
        except queue.Empty:
            break
        if isinstance(more, KubeError):
            raise more
    return timer.guess()


def _crash(client: KubeClient, namespace: str, pods: list[dict[str, Any]], restart_limit: int, grace: float,
           now: float, first_unschedulable: dict[str, float], past_deadline: bool) -> Crash | None:
    """The first crash-looping new pod (with its classified log), or one Unschedulable past the grace (at once past
    the progress deadline, as ``wait_restored`` judges it)."""
    for pod in pods:
        health = pod_health(pod)
        bad = crashing_container(health, restart_limit)
        if bad is not None:
            return crash_report(client, namespace, health, bad)
    for pod in pods:
        health = pod_health(pod)
        if not health.unschedulable:
            first_unschedulable.pop(health.name, None)
            continue
        since = first_unschedulable.setdefault(health.name, now)
        if past_deadline or now - since >= grace:
            return Crash(pod=health.name, kind="unschedulable",
                         message=f"pod {health.name}: Unschedulable: {health.unschedulable}")
    return None


def _shutdown(stream: Any) -> None:
    """Shut the stream's socket down first: outside gevent, ``close`` waits for the reading thread, which sits in
    ``recv`` until the server's next byte — seconds on an idle watch (a bookmark's interval, minutes on a real API
    server). A shutdown ends that ``recv`` at once, so the wait returns when it is done."""
    conn = getattr(stream, "connection", None) or getattr(stream, "_connection", None)
    sock = getattr(conn, "sock", None)
    if sock is not None:
        sock.shutdown(socket.SHUT_RDWR)

