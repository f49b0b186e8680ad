"""Alertmanager's webhook payload (version 4) → typed alerts, or one line saying what is wrong (pure).

Why strict: a receiver that acts on a cluster must not act on something it half understood. The payload is
Alertmanager's documented shape (``version``, ``status``, ``alerts[]`` with ``status``, ``labels``,
``annotations``, ``startsAt``, ``fingerprint``); anything else is refused whole, before any alert is used.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

#: Largest body read; Alertmanager batches alerts of a group, a few kB each.
MAX_BODY = 1 << 20
#: Alertmanager's fingerprints are 16 hex digits; they name note files and log lines, so nothing else passes.
_FINGERPRINT = re.compile(r"[0-9a-f]{1,64}")
#: startsAt outside these years is no alert time (Go's zero time, year 9999): refused before anything acts on it.
_YEARS = (2000, 2999)


class PayloadError(ValueError):
    """The body is not an Alertmanager v4 webhook payload; the message is the one line answered with 400."""


@dataclass(frozen=True)
class Alert:
    """One alert of the payload: what routing and the gate read."""

    status: str  # "firing" | "resolved"
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    starts_at: datetime
    fingerprint: str

    @property
    def name(self) -> str:
        return self.labels.get("alertname", "")

    @property
    def firing(self) -> bool:
        return self.status == "firing"


@dataclass(frozen=True)
class Notification:
    """One POST from Alertmanager: its receiver, group key and alerts."""

    receiver: str
    group_key: str
    alerts: tuple[Alert, ...] = field(default_factory=tuple)


def printable(text: str) -> str:
    """``text`` with control and other unprintable characters escaped, for a log line that cannot be forged."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _strings(value: Any, where: str) -> dict[str, str]:
    if not isinstance(value, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise PayloadError(f"{where}: expected a mapping of strings to strings")
    return dict(value)


def _time(value: Any, where: str) -> datetime:
    if not isinstance(value, str):
        raise PayloadError(f"{where}: expected an RFC 3339 time, got {type(value).__name__}")
    text = value[:-1] + "+00:00" if value.endswith("Z") else value
    if "." in text:  # Go writes up to nine fraction digits; Python reads six
        head, _, rest = text.partition(".")
        digits = rest[: len(rest) - len(rest.lstrip("0123456789"))]
        text = f"{head}.{digits[:6].ljust(6, '0')}{rest[len(digits):]}"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise PayloadError(f"{where}: expected an RFC 3339 time, got {value!r}") from None
    if parsed.tzinfo is None:
        raise PayloadError(f"{where}: expected an RFC 3339 time with a zone, got {value!r}")
    if not _YEARS[0] <= parsed.year <= _YEARS[1]:
        raise PayloadError(f"{where}: expected a time in the years {_YEARS[0]}-{_YEARS[1]}, got {value!r}")
    return parsed


def _alert(raw: Any, i: int) -> Alert:
    where = f"alerts[{i}]"
    if not isinstance(raw, Mapping):
        raise PayloadError(f"{where}: expected an object")
    status = raw.get("status")
    if status not in ("firing", "resolved"):
        raise PayloadError(f"{where}.status: expected firing or resolved, got {status!r}")
    labels = _strings(raw.get("labels"), f"{where}.labels")
    if not labels.get("alertname"):
        raise PayloadError(f"{where}.labels.alertname: missing")
    fingerprint = raw.get("fingerprint")
    if not isinstance(fingerprint, str) or not fingerprint:
        raise PayloadError(f"{where}.fingerprint: missing (Alertmanager 0.19 or later sends it)")
    if not _FINGERPRINT.fullmatch(fingerprint):
        raise PayloadError(f"{where}.fingerprint: expected 1-64 lowercase hex digits, got {fingerprint[:80]!r}")
    return Alert(status, labels, _strings(raw.get("annotations", {}), f"{where}.annotations"),
                 _time(raw.get("startsAt"), f"{where}.startsAt"), fingerprint)


def parse(body: bytes) -> Notification:
    """The notification in ``body``; PayloadError (one line, naming the key) for anything else."""
    if len(body) > MAX_BODY:
        raise PayloadError(f"body: larger than {MAX_BODY} bytes")
    try:
        data = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise PayloadError(f"body: not JSON ({' '.join(str(exc).split())})") from None
    except RecursionError:  # `[` nested thousands deep: Python's parser gives up
        raise PayloadError("body: JSON nested too deeply") from None
    if not isinstance(data, Mapping):
        raise PayloadError("body: expected a JSON object (Alertmanager's webhook payload)")
    if data.get("version") != "4":
        raise PayloadError(f"version: expected \"4\" (Alertmanager's webhook payload), got {data.get('version')!r}")
    alerts = data.get("alerts")
    if not isinstance(alerts, list):
        raise PayloadError("alerts: expected a list")
    receiver, group_key = data.get("receiver", ""), data.get("groupKey", "")
    if not isinstance(receiver, str) or not isinstance(group_key, str):
        raise PayloadError("receiver, groupKey: expected strings")
    return Notification(receiver, group_key, tuple(_alert(a, i) for i, a in enumerate(alerts)))
