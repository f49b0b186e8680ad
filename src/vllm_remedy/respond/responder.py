"""From a parsed notification to actions: route each firing alert, ask the gate, run the deploy in a worker
thread, and put the incident on the record. The HTTP side (server.py) only parses, enqueues and answers.
"""

from __future__ import annotations

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
from .gate import RUN, SKIP, Gate
from .routing import InventoryHost, route
from .webhook import Alert, Notification

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
    """One dispatcher thread takes notifications in order; each action runs in a thread of its own."""

    def __init__(self, settings: Settings, clock: Callable[[], float] = time.monotonic) -> None:
        self.settings = settings
        self.metrics = Metrics()
        self.gate = Gate()
        self._lock = threading.Lock()
        self._clock = clock
        self._queue: queue.Queue[Notification | None] = queue.Queue()
        self._workers: list[threading.Thread] = []
        self._dispatcher = threading.Thread(target=self._dispatch, name="respond-dispatch", daemon=True)

    def start(self) -> None:
        self._dispatcher.start()

    def submit(self, notification: Notification) -> None:
        self._queue.put(notification)

    def stop(self, wait: float = 5.0) -> None:
        self._queue.put(None)
        self._dispatcher.join(wait)
        for worker in list(self._workers):
            worker.join(wait)

    # ---- dispatch ---------------------------------------------------------------------------------------------
    def _dispatch(self) -> None:
        while True:
            notification = self._queue.get()
            try:
                if notification is None:
                    return
                self._handle(notification)
            except Exception:  # one bad notification must not stop the responder
                log.exception("notification %s: not handled", notification and notification.group_key)
            finally:
                self._queue.task_done()

    def _decided(self, alert: Alert, decision: str, line: str) -> None:
        self.metrics.alerts.labels(alert.name, decision).inc()
        log.info("%s [%s] %s: %s", alert.name, alert.fingerprint, decision, line)

    def _handle(self, notification: Notification) -> None:
        firing = [a for a in notification.alerts if a.firing]
        for alert in notification.alerts:
            if not alert.firing:
                self._decided(alert, "resolved", "resolved: nothing to do")
        if not firing:
            return
        try:
            hosts = inventory.load(self.settings.inventory)
        except UserError as exc:
            for alert in firing:
                self._decided(alert, "error", str(exc))
            return
        for alert in firing:
            self._one(alert, hosts)

    def _one(self, alert: Alert, hosts: list[InventoryHost]) -> None:
        with self._lock:
            repeat = self.gate.repeat(alert.fingerprint, self._clock())
        if repeat is not None:
            self._decided(alert, "skipped", repeat.reason)
            return
        where = route(alert, hosts, inventory.owner_deployment)
        if where.host is None or where.deploy is None:
            self._decided(alert, "ignored", where.reason)
            return
        host = where.host
        respond = host.data.get("respond") or {}
        if "error" in respond:
            self._decided(alert, "error", f"{host.name}: {respond['error']}")
            return
        mode = str(respond.get("mode", "off"))
        with self._lock:
            decision = self.gate.decide(host.name, alert.fingerprint, mode, float(respond.get("cooldown", 0)),
                                        self._clock())
        if decision.kind == SKIP:
            self._decided(alert, "skipped", f"{host.name}: {decision.reason}")
            return
        self._decided(alert, decision.kind, f"{where.reason} ({decision.reason})")
        incident = record.Incident(alert, host, where.deploy, mode)
        incident.note(f"alert {alert.name} received; routed to {host.name}, deploys/{where.deploy}.py, "
                      f"mode {mode}")
        worker = threading.Thread(target=self._act, args=(incident, decision.kind == RUN), daemon=True,
                                  name=f"respond {host.name}")
        self._workers = [w for w in self._workers if w.is_alive()] + [worker]
        worker.start()

    # ---- one action -------------------------------------------------------------------------------------------
    def _act(self, incident: record.Incident, apply: bool) -> None:
        host = incident.host
        self.metrics.running.inc()
        try:
            self._run(incident, apply)
        except Exception:
            log.exception("%s: the action failed unexpectedly", host.name)
        finally:
            self.metrics.running.dec()
            with self._lock:
                self.gate.finished(host.name, self._clock())

    def _run(self, incident: record.Incident, apply: bool) -> None:
        host, settings = incident.host, self.settings
        diag = deploy.run(settings.inventory, "diagnose", host.name, dry=True)  # read-only: evidence for the note
        incident.evidence = diag.evidence
        incident.note("diagnosis read (deploys/diagnose.py --dry)")
        client = self._client(host)
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
        log.info("%s: %s", host.name, incident.summary())
        if settings.notes is not None:
            try:
                path = record.write_note(settings.notes, incident)
                log.info("%s: incident note %s", host.name, path)
            except OSError as exc:
                log.error("%s: cannot write the incident note: %s", host.name, exc)
        if settings.chat_webhook:
            try:
                record.post_chat(settings.chat_webhook, incident.summary())
            except OSError as exc:
                log.error("%s: %s", host.name, exc)

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
        except KubeError as exc:
            log.error("%s: Event %s not recorded: %s", incident.host.name, reason, exc)
