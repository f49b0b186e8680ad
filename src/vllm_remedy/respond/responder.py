"""From a parsed notification to actions: route each firing alert, ask the gate, run the deploy in a worker
thread, and put the incident on the record. The HTTP side (server.py) only parses, submits and answers.

Why decide in :meth:`Responder.submit`: resolved alerts, alerts no deploy answers and repeats inside the
cool-down are settled there, in the request, without the inventory — so junk never queues ahead of a page. The
rest wait in a bounded queue (full: the webhook answers 503 and Alertmanager retries) for one dispatcher that
routes with the cached inventory and starts each action in a thread of its own; the gate keeps one per host.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from vllm_remedy.errors import UserError
from vllm_remedy.kube.client import KubeClient
from vllm_remedy.kube.errors import KubeError

from . import deploy, inventory, record
from .clock import ClusterTime
from .gate import RUN, SKIP, Gate, stamped
from .routing import ACTIONS, RENDERED, InventoryHost, route
from .webhook import Alert, Notification, printable

log = logging.getLogger("vllm_remedy.respond")


@dataclass(frozen=True)
class Settings:
    """What ``vllm-remedy respond`` was started with."""

    inventory: str
    notes: Path | None = None
    chat_webhook: str | None = None


class Metrics:
    """The responder's own series, on a registry of its own (``/metrics``)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.alerts = Counter("vllm_remedy_respond_alerts", "Alerts received, by alert name and what was decided.",
                              ("alertname", "decision"), registry=self.registry)
        self.actions = Counter("vllm_remedy_respond_actions", "Deploys run for alerts, by deploy and result.",
                               ("deploy", "result"), registry=self.registry)
        self.running = Gauge("vllm_remedy_respond_actions_running", "Deploys running now.", registry=self.registry)
        self.seconds = Histogram("vllm_remedy_respond_action_seconds", "How long a deploy run took.", ("deploy",),
                                 buckets=(5, 15, 30, 60, 120, 300, 600, 1200, 3600), registry=self.registry)
        self.restore = Histogram("vllm_remedy_respond_time_to_restore_seconds",
                                 "From the alert's startsAt to a remediation written and rolled out.",
                                 buckets=(30, 60, 120, 300, 600, 900, 1800, 3600), registry=self.registry)


class Responder:
    """Cheap decisions in :meth:`submit`; one dispatcher routes the rest in order; each action has a thread."""

    #: Alerts waiting for the dispatcher; more are refused (503) rather than held without bound.
    QUEUE = 256
    #: An alert naming no inventory host reloads an inventory loaded longer ago than this (namespace hosts).
    MISS_RELOAD = 60.0

    def __init__(self, settings: Settings, clock: Callable[[], float] = time.monotonic,
                 queue_size: int = QUEUE) -> None:
        self.settings = settings
        self.metrics = Metrics()
        self.gate = Gate()
        self._clocks: dict[str, ClusterTime] = {}  # host -> its cluster's clock: the gate counts in it
        self.inventory = inventory.Cache(settings.inventory)
        self._lock = threading.Lock()
        self._clock = clock
        self._queue: queue.Queue[Alert | None] = queue.Queue(queue_size)
        self._workers: list[threading.Thread] = []
        self._dispatcher = threading.Thread(target=self._dispatch, name="respond-dispatch", daemon=True)

    def start(self) -> None:
        self._dispatcher.start()

    def submit(self, notification: Notification) -> int:
        """Settle what needs no inventory; queue the rest (how many). queue.Full when there is no room for them,
        before any is queued or logged, so Alertmanager's retry of the whole notification is not a repeat."""
        todo = []
        for alert in notification.alerts:
            if not alert.firing:
                self._decided(alert, "resolved", "resolved: nothing to do")
            elif alert.name not in ACTIONS:
                self._decided(alert, "ignored", f"alert {alert.name}: no deploy answers it (responds to "
                              f"{', '.join(sorted(ACTIONS))})")
            else:
                with self._lock:
                    repeat = self.gate.repeat(alert.fingerprint, self._guess)
                if repeat is not None:
                    self._decided(alert, "skipped", repeat.reason)
                else:
                    todo.append(alert)
        with self._queue.mutex:  # all or none: a notification half queued would be half repeated on retry
            if self._queue.maxsize and self._queue.maxsize - len(self._queue.queue) < len(todo):
                raise queue.Full
        for alert in todo:
            self._queue.put_nowait(alert)
        return len(todo)

    def stop(self, wait: float = 5.0) -> None:
        with contextlib.suppress(queue.Full):
            self._queue.put(None, timeout=wait)
        self._dispatcher.join(wait)
        for worker in list(self._workers):
            worker.join(wait)

    # ---- dispatch ---------------------------------------------------------------------------------------------
    def _dispatch(self) -> None:
        while True:
            alert = self._queue.get()
            try:
                if alert is None:
                    return
                self._one(alert)
            except Exception:  # one bad alert must not stop the responder
                log.exception("alert [%s]: not handled", alert and alert.fingerprint)
            finally:
                self._queue.task_done()

    def _decided(self, alert: Alert, decision: str, line: str) -> None:
        self.metrics.alerts.labels(alert.name if alert.name in RENDERED else "other", decision).inc()
        log.info("%s [%s] %s: %s", printable(alert.name), alert.fingerprint, decision, printable(line))

    def hosts(self, max_age: float | None = None) -> list[InventoryHost]:
        """The inventory's hosts (cached; a load is logged); UserError naming the file when it does not load."""
        before = self.inventory.loads
        hosts = self.inventory.hosts(max_age)
        if self.inventory.loads != before:
            log.info("inventory %s: %d host(s) loaded", self.settings.inventory, len(hosts))
        return hosts

    def _guess(self, host: str) -> float | None:
        """``host``'s cluster time without a request (None before its clock was first read)."""
        known = self._clocks.get(host)
        return None if known is None else known.guess()

    def _now(self, host: str, client: KubeClient | None) -> float:
        """``host``'s cluster time, read through ``client`` (the API server's Date, as the deploys stamp it); without
        an answer the guess from the last reading, and with none ever the responder's own clock."""
        with self._lock:
            known = self._clocks.setdefault(host, ClusterTime(self._clock))
        now = known.now(client)
        return time.time() if now is None else now

    def _one(self, alert: Alert) -> None:
        with self._lock:
            repeat = self.gate.repeat(alert.fingerprint, self._guess)
        if repeat is not None:  # a repeat queued before the first was decided
            self._decided(alert, "skipped", repeat.reason)
            return
        try:
            where = route(alert, self.hosts(), inventory.owner_deployment)
            if where.host is None and where.deploy is not None:  # perhaps a Deployment new since the last load
                where = route(alert, self.hosts(self.MISS_RELOAD), inventory.owner_deployment)
        except UserError as exc:
            self._decided(alert, "error", str(exc))
            return
        if where.host is None or where.deploy is None:
            self._decided(alert, "ignored", where.reason)
            return
        host = where.host
        respond = inventory.respond_policy(host)  # the policy file as it is now: a changed cool-down acts at once
        if "error" in respond:
            self._decided(alert, "error", f"{host.name}: {respond['error']}")
            return
        mode = str(respond.get("mode", "off"))
        client = self._client(host) if mode != "off" else None
        now = self._now(host.name, client) if mode != "off" else 0.0
        with self._lock:
            decision = self.gate.decide(host.name, alert.fingerprint, mode, float(respond.get("cooldown", 0)), now)
        if decision.kind == SKIP:
            self._decided(alert, "skipped", f"{host.name}: {decision.reason}")
            return
        incident = record.Incident(alert, host, where.deploy, mode, respond)
        incident.note(f"alert {alert.name} received; routed to {host.name}, deploys/{where.deploy}.py, "
                      f"mode {mode}")
        worker = threading.Thread(target=self._act, args=(incident, decision.kind, f"{where.reason} "
                                  f"({decision.reason})", client), daemon=True, name=f"respond {host.name}")
        self._workers = [w for w in self._workers if w.is_alive()] + [worker]
        worker.start()

    # ---- one action -------------------------------------------------------------------------------------------
    def _act(self, incident: record.Incident, kind: str, why: str, client: KubeClient | None = None) -> None:
        host = incident.host
        try:
            if self._stamped(incident, client):
                return
        except Exception:
            log.exception("%s: the cool-down stamp was not read", host.name)
        self._decided(incident.alert, kind, why)
        self.metrics.running.inc()
        try:
            self._run(incident, kind == RUN, client)
        except Exception:
            log.exception("%s: the action failed unexpectedly", host.name)
        finally:
            self.metrics.running.dec()
            ended = self._now(host.name, client)
            with self._lock:
                self.gate.finished(host.name, ended)

    def _stamped(self, incident: record.Incident, client: KubeClient | None) -> bool:
        """Whether the Deployment's last-action stamp puts the host in cool-down (logged, host freed); a
        Deployment that cannot be read is left to the deploy, which reads it again and says what is wrong."""
        host, respond = incident.host, incident.respond
        if client is None:
            return False
        try:
            current = client.get_deployment(host.namespace, host.deployment)
        except KubeError:
            return False
        notes = (current.get("metadata") or {}).get("annotations") or {}
        now = self._now(host.name, client)  # the cluster's clock: the one the stamp was written in
        found = stamped(notes, str(respond.get("annotation_prefix", "vllm-remedy.io/")),
                        float(respond.get("cooldown", 0)), now)
        if found is None:
            return False
        decision, age = found
        with self._lock:
            self.gate.release(host.name, incident.alert.fingerprint, now - age)
        self._decided(incident.alert, "skipped", f"{host.name}: {decision.reason}")
        return True

    def _run(self, incident: record.Incident, apply: bool, client: KubeClient | None) -> None:
        host, settings = incident.host, self.settings
        diag = deploy.run(settings.inventory, "diagnose", host.name, dry=True)  # read-only: evidence for the note
        incident.evidence = diag.evidence
        incident.note("diagnosis read (deploys/diagnose.py --dry)")
        if apply:
            self._event(client, incident, "RemediationStarted", "Normal",
                        f"{incident.alert.name}: running deploys/{incident.deploy}.py -y", "Started")
        incident.note(f"deploys/{incident.deploy}.py {'-y' if apply else '--dry'} started")
        done = deploy.run(settings.inventory, incident.deploy, host.name, dry=not apply)
        incident.finish(done)
        self.metrics.actions.labels(incident.deploy, incident.result).inc()
        self.metrics.seconds.labels(incident.deploy).observe(done.seconds)
        if incident.restored_after is not None:
            self.metrics.restore.observe(incident.restored_after)
        if apply:
            reason, kind = record.RESULTS[incident.result]
            self._event(client, incident, reason, kind, incident.summary(), incident.deploy)
        # each record on its own: a note that cannot be written must not keep the chat from hearing, nor back
        if settings.notes is not None:
            try:
                path = record.write_note(settings.notes, incident)
                log.info("%s: incident note %s", host.name, path)
            except Exception as exc:
                log.error("%s: cannot write the incident note: %s: %s", host.name, type(exc).__name__, exc)
        # the summary after the note: whoever acts on the log line (a person, a log alert) finds the note written
        log.info("%s: %s", host.name, printable(incident.summary()))
        if settings.chat_webhook:
            try:
                record.post_chat(settings.chat_webhook, incident.summary())
            except Exception as exc:
                log.error("%s: chat not told: %s: %s", host.name, type(exc).__name__, exc)

    def _client(self, host: InventoryHost) -> KubeClient | None:
        try:
            return inventory.client_for(host)
        except UserError as exc:
            log.error("%s: no API client for Events: %s", host.name, exc)
            return None

    def _event(self, client: KubeClient | None, incident: record.Incident, reason: str, kind: str, message: str,
               action: str) -> None:
        if client is None:
            return
        try:
            current = client.get_deployment(incident.host.namespace, incident.host.deployment)
            record.emit_event(client, record.event_body(incident, current, reason, kind, message, action))
            incident.note(f"Event {reason} recorded on deployment {incident.host.namespace}/"
                          f"{incident.host.deployment}")
        except Exception as exc:  # a missing Event never stops a remediation nor its note
            log.error("%s: Event %s not recorded: %s: %s", incident.host.name, reason, type(exc).__name__, exc)
