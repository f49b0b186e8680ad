"""The incident on the record: Kubernetes Events on the workload, an incident note (Markdown + JSON) and an
optional chat message. Building them is pure; :func:`emit_event`, :func:`write_note` and :func:`post_chat` do I/O.

Why Events: ``kubectl describe deploy`` and every cluster dashboard show them next to the rollout, so whoever
looks at the Deployment after the page sees what the responder did and what it predicted, without our logs.
"""

from __future__ import annotations

import json
import os
import re
import socket
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from vllm_remedy.kube.client import KubeClient

from .deploy import DeployRun
from .routing import InventoryHost
from .webhook import Alert, printable

REPORTING_CONTROLLER = "vllm-remedy.io/responder"
#: The result of an incident → the Event reason and type it ends with.
RESULTS = {
    "remediated": ("Remediated", "Normal"),
    "nothing-to-change": ("NothingToChange", "Normal"),
    "refused": ("RemediationRefused", "Warning"),
    "failed": ("RemediationFailed", "Warning"),
}  # no dry-run entry: a dry run writes nothing to the cluster, not even an Event
_MESSAGE_MAX = 1024


def _safe(part: str) -> str:
    """``part`` fit for a file name: letters, digits, dot and dash only (no ``/``, no newline, no leading dot)."""
    return re.sub(r"[^A-Za-z0-9.-]", "-", part).lstrip(".") or "-"


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _stamp(when: datetime) -> str:
    return when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Incident:
    """One alert answered on one host: what was seen, done, predicted, and how it ended."""

    alert: Alert
    host: InventoryHost
    deploy: str
    mode: str
    respond: dict[str, Any] = field(default_factory=dict)  # the host's respond policy as the page was decided under
    timeline: list[tuple[datetime, str]] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)
    run: DeployRun | None = None
    result: str = ""
    restored_after: float | None = None  # seconds from the alert's startsAt to the deploy's end

    def note(self, what: str, when: datetime | None = None) -> None:
        self.timeline.append((when or _now(), what))

    @property
    def id(self) -> str:
        start = self.timeline[0][0] if self.timeline else _now()
        parts = (self.host.namespace, self.host.deployment, self.alert.fingerprint[:12])
        return "-".join([start.strftime("%Y%m%dT%H%M%SZ"), *(_safe(p) for p in parts)])

    def finish(self, run: DeployRun) -> None:
        """Classify the run: a remedy written, nothing to change, a refusal (the deploy failed having written no
        remedy — a GitOps stance, nothing predicted to fit — its last line saying why) or a failure after a
        remedy was written (e.g. the rollback did not become Ready). A ``--dry`` run exits 1 exactly when ``-y``
        would fail at a refusal (every refusal marks its host failed in ``--dry`` too), so it reads the same way."""
        self.run = run
        if run.dry:
            self.result = "dry-run" if run.returncode == 0 else "refused"
        elif run.returncode == 0:
            self.result = "remediated" if run.remedies else "nothing-to-change"
        else:
            self.result = "failed" if run.remedies else "refused"
        end = _now()
        if self.result == "remediated":
            self.restored_after = max(0.0, (end - self.alert.starts_at).total_seconds())
        self.note(f"{self.deploy} {self.result}" + (f": {run.failure}" if run.failure else ""), end)

    def summary(self) -> str:
        """One line: the alert, the change and the prediction — the Event message and the chat text's head."""
        run = self.run
        change = "; ".join(run.changes) if run and run.changes else "no change"
        pred = "; ".join(run.predictions) if run and run.predictions else "no prediction shown"
        # a refusal leads: it is what the reader needs (the result word already says "refused")
        why = f"{run.failure.removeprefix('refused: ')} — " if run and run.failure else ""
        dry = " (dry run, nothing written)" if self.mode == "dry-run" else ""
        name = printable(self.alert.name)
        text = f"{name} on {self.host.name}: deploys/{self.deploy}.py {self.result}{dry}: {why}{change}; {pred}"
        return text if len(text) <= _MESSAGE_MAX else text[: _MESSAGE_MAX - 1] + "…"

    def to_json(self) -> dict[str, Any]:
        run = self.run
        return {
            "apiVersion": "vllm-remedy.io/v1alpha1", "kind": "IncidentNote", "id": self.id,
            "alert": {"name": self.alert.name, "fingerprint": self.alert.fingerprint,
                      "startsAt": _stamp(self.alert.starts_at), "labels": dict(self.alert.labels)},
            "host": self.host.name, "deploy": self.deploy, "mode": self.mode, "result": self.result,
            "timeline": [{"at": _stamp(t), "what": w} for t, w in self.timeline],
            "diagnosis": list(self.evidence),
            "changes": run.changes if run else [], "diff": run.diff if run else [],
            "prediction": run.predictions if run else [], "failure": run.failure if run else None,
            "output": list(run.lines) if run else [],
            "timeToRestoreSeconds": None if self.restored_after is None else round(self.restored_after, 1),
        }

    def markdown(self) -> str:
        run = self.run
        ttr = "—" if self.restored_after is None else f"{self.restored_after:.0f}s (from the alert's startsAt)"
        name = printable(self.alert.name).replace("`", "'")
        out = [f"# Incident {self.id}", "", f"**{self.summary()}**", "",
               f"- alert: `{name}` (fingerprint `{self.alert.fingerprint}`), firing since "
               f"{_stamp(self.alert.starts_at)}",
               f"- host: `{self.host.name}`; deploy: `deploys/{self.deploy}.py`; mode: {self.mode}",
               f"- result: **{self.result}**; time to restore: {ttr}", "", "## Timeline", ""]
        out += [f"- {_stamp(t)} {w}" for t, w in self.timeline]
        out += ["", "## Diagnosis", "", "```", *(self.evidence or ["(none)"]), "```"]
        out += ["", "## Diff", "", "```diff", *((run.diff if run else []) or ["(no change)"]), "```"]
        out += ["", "## Prediction", ""] + [f"- {p}" for p in ((run.predictions if run else []) or ["(none shown)"])]
        out += ["", "## Deploy output", "", "```", *(run.lines if run else []), "```", ""]
        return "\n".join(out)


def event_body(incident: Incident, deployment: dict[str, Any], reason: str, kind: str, message: str,
               action: str) -> dict[str, Any]:
    """A core/v1 Event on the Deployment (the rehearsal cluster, like every cluster, serves core/v1 events)."""
    meta = deployment.get("metadata") or {}
    now = _now().strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"generateName": f"{meta.get('name', incident.host.deployment)}.",
                     "namespace": incident.host.namespace},
        "involvedObject": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": incident.host.namespace,
                           "name": incident.host.deployment, "uid": meta.get("uid", ""),
                           "resourceVersion": meta.get("resourceVersion", "")},
        "reason": reason, "message": message[:_MESSAGE_MAX], "type": kind, "action": action, "count": 1,
        "firstTimestamp": now, "lastTimestamp": now,
        "source": {"component": "vllm-remedy-responder"},
        "reportingComponent": REPORTING_CONTROLLER, "reportingInstance": socket.gethostname()[:128],
    }


def emit_event(client: KubeClient, body: dict[str, Any]) -> dict[str, Any]:
    """POST the Event; KubeError on refusal (the caller logs it: a missing Event never stops a remediation)."""
    return client.request("POST", client.object_path(body["metadata"]["namespace"], "events", group="v1"),
                          body=body)


def write_note(directory: Path, incident: Incident) -> Path:
    """``<dir>/<id>.md`` and ``<dir>/<id>.json``, each written whole (temp file, rename); the Markdown's path."""
    directory.mkdir(parents=True, exist_ok=True)
    for suffix, text in ((".json", json.dumps(incident.to_json(), indent=2, ensure_ascii=False) + "\n"),
                         (".md", incident.markdown())):
        path = directory / f"{incident.id}{suffix}"
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    return directory / f"{incident.id}.md"


def post_chat(url: str, text: str, timeout: float = 10.0) -> None:
    """POST Slack-compatible ``{"text": ...}``; OSError (one line) when the chat does not take it."""
    request = urllib.request.Request(url, data=json.dumps({"text": text}).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            response.read()
    except urllib.error.HTTPError as exc:
        raise OSError(f"{url}: chat webhook answered HTTP {exc.code}") from None
    except (urllib.error.URLError, OSError) as exc:
        raise OSError(f"{url}: cannot reach the chat webhook ({getattr(exc, 'reason', exc)})") from None
