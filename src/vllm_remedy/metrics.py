"""vllm-remedy's own Prometheus metrics: drift found, timed overrides' expiry, remediations, last check.

Scheduled checks are short-lived processes, so nothing is served: a run collects :class:`Metrics`, then
writes them for node-exporter's textfile collector (:func:`write_textfile`, atomic) and/or pushes them to a
Pushgateway (:func:`push`, stdlib urllib). Usage from drift/expire/deploys::

    m = Metrics()
    m.drift("@k8s/prod/llm/llama-8b", "max-model-len", detected=True)
    m.unknown("@k8s/prod/llm/llama-8b", "prediction", unknown=False)
    m.override_expiry("@k8s/prod/llm/llama-8b", "enforce-eager", expires_at)   # aware datetime or epoch s
    m.remediation("rollback", "applied")
    m.checked(now)                  # only after a check that completed: a failed run must look stale
    write_textfile(Path("/var/lib/node_exporter/textfile/vllm-remedy-drift.prom"), m)
    push("http://pushgateway:9091", m, grouping={"cluster": "prod"})

The counter ``vllm_remedy_remediations_total`` must never go down, yet each run starts from zero: both
writers add the totals already published (the file being replaced, the Pushgateway's group) to this run's.
Give each writer (drift CronJob, expire, deploys) its own file or grouping key — one replaces the other's.
"""

from __future__ import annotations

import base64
import math
import os
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from vllm_remedy.errors import UserError

DRIFT_DETECTED = "vllm_remedy_drift_detected"
DRIFT_UNKNOWN = "vllm_remedy_drift_unknown"
OVERRIDE_EXPIRY = "vllm_remedy_override_expiry_timestamp_seconds"
REMEDIATIONS = "vllm_remedy_remediations_total"
LAST_CHECK = "vllm_remedy_last_check_timestamp_seconds"
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


@dataclass(frozen=True)
class Family:
    """A metric family: its TYPE, HELP and the label names every sample carries, in order."""

    name: str
    type: str
    help: str
    labels: tuple[str, ...]


#: Written in this order; HELP text is fixed so several files of one node-exporter never disagree.
FAMILIES = (
    Family(DRIFT_DETECTED, "gauge", "1 when the last drift check found this check failing on the host, else 0.",
           ("host", "check")),
    Family(DRIFT_UNKNOWN, "gauge", "1 when the last drift check could not judge this check on the host, else 0.",
           ("host", "check")),
    Family(OVERRIDE_EXPIRY, "gauge", "Unix time at which a timed override (e.g. --enforce-eager) must revert.",
           ("host", "flag")),
    Family(REMEDIATIONS, "counter", "Remediation actions taken, by action and result.", ("action", "result")),
    Family(LAST_CHECK, "gauge", "Unix time at which the last drift check completed.", ()),
)
_BY_NAME = {f.name: f for f in FAMILIES}
_SAMPLE = re.compile(r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>.*)\})?\s+(?P<value>\S+)(?:\s+\S+)?$")
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*,?')
_UNESCAPE = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}

Labels = tuple[str, ...]


class PushError(UserError):
    """The Pushgateway refused or could not be reached; one line naming the URL and the answer."""


def escape_label_value(value: str) -> str:
    """The text format's escaping inside a quoted label value: backslash, double quote, newline."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def format_value(value: float) -> str:
    """Integers without a fraction (timestamps read as written), Go's spellings for the special floats."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(float(value))


def _epoch(when: datetime | float) -> float:
    if isinstance(when, datetime):
        if when.tzinfo is None:
            raise ValueError(f"{when.isoformat()}: a timezone-aware datetime is needed for a Unix timestamp")
        return when.timestamp()
    return float(when)


@dataclass
class Metrics:
    """One run's samples, by family and label values. Setting a gauge twice keeps the last value."""

    samples: dict[str, dict[Labels, float]] = field(default_factory=lambda: {f.name: {} for f in FAMILIES})

    def drift(self, host: str, check: str, detected: bool) -> None:
        """Record one check on one host; report passing checks too (0), so a fixed drift clears the alert."""
        self.samples[DRIFT_DETECTED][(host, check)] = 1.0 if detected else 0.0

    def unknown(self, host: str, check: str, unknown: bool) -> None:
        """Record whether a check could be judged on ``host`` (a model or GPU outside the catalogs: 1); judged 0."""
        self.samples[DRIFT_UNKNOWN][(host, check)] = 1.0 if unknown else 0.0

    def override_expiry(self, host: str, flag: str, expires_at: datetime | float) -> None:
        """A timed toggle in force on ``host`` (``flag`` as the policy spells it, e.g. enforce-eager)."""
        self.samples[OVERRIDE_EXPIRY][(host, flag)] = _epoch(expires_at)

    def remediation(self, action: str, result: str, count: float = 1) -> None:
        """Count an action (rollback, budget, shed-load, expire, …) with its result (applied, refused, failed…)."""
        if count < 0:
            raise ValueError(f"{REMEDIATIONS} only goes up, got {count}")
        key = (action, result)
        self.samples[REMEDIATIONS][key] = self.samples[REMEDIATIONS].get(key, 0.0) + count

    def checked(self, at: datetime | float) -> None:
        """Mark a drift check as completed; never call it for a run that failed."""
        self.samples[LAST_CHECK][()] = _epoch(at)

    def carry_unchecked(self, previous_text: str, hosts: set[str], where: Mapping[str, str] | None = None) -> None:
        """Keep the last known drift and expiry series of ``hosts`` this run could not check, and the old
        last-check time when this run set none: an API error must leave the alerts where they were (the
        staleness alert then fires on the unchanged timestamp), not resolve them by dropping the series."""
        for family in (DRIFT_DETECTED, DRIFT_UNKNOWN, OVERRIDE_EXPIRY):
            for key, value in parse_samples(previous_text, family, where).items():
                if key and key[0] in hosts:
                    self.samples[family].setdefault(key, value)
        if not self.samples[LAST_CHECK]:
            self.samples[LAST_CHECK].update(parse_samples(previous_text, LAST_CHECK, where))

    def carry_counters(self, previous: Mapping[Labels, float]) -> None:
        """Add totals already published (:func:`parse_samples` of the old file) so the counter never resets."""
        for key, value in previous.items():
            self.samples[REMEDIATIONS][key] = self.samples[REMEDIATIONS].get(key, 0.0) + value

    def render(self) -> str:
        """Text exposition format 0.0.4: HELP and TYPE per family with samples, samples sorted by labels."""
        lines: list[str] = []
        for fam in FAMILIES:
            samples = self.samples[fam.name]
            if not samples:
                continue
            lines += [f"# HELP {fam.name} {fam.help}", f"# TYPE {fam.name} {fam.type}"]
            for values in sorted(samples):
                labels = ",".join(f'{k}="{escape_label_value(v)}"' for k, v in zip(fam.labels, values, strict=True))
                lines.append(f"{fam.name}{{{labels}}} {format_value(samples[values])}" if labels
                             else f"{fam.name} {format_value(samples[values])}")
        return "\n".join(lines) + "\n" if lines else ""


def _labels(text: str) -> dict[str, str] | None:
    out: dict[str, str] = {}
    pos = 0
    while pos < len(text):
        match = _LABEL.match(text, pos)
        if match is None:
            return None
        out[match.group(1)] = re.sub(r'\\[\\"n]', lambda m: _UNESCAPE[m.group(0)], match.group(2))
        pos = match.end()
    return out


def parse_samples(text: str, name: str, where: Mapping[str, str] | None = None) -> dict[Labels, float]:
    """Samples of one of our families in a text exposition, keyed by the family's label values.

    ``where`` keeps only samples carrying those labels too (a Pushgateway group's job/instance). Lines that
    are not readable samples are skipped: this reads back what we (or the Pushgateway) wrote, not any input.
    """
    fam = _BY_NAME[name]
    out: dict[Labels, float] = {}
    for line in text.split("\n"):  # not splitlines(): \x1e, \x85 … may sit inside label values
        match = _SAMPLE.match(line.strip(" \t\r"))
        if match is None or match["name"] != name:
            continue
        labels = _labels(match["labels"] or "")
        if labels is None or any(labels.get(k) != v for k, v in (where or {}).items()):
            continue
        try:
            value = float(match["value"])
        except ValueError:
            continue
        out[tuple(labels.get(k, "") for k in fam.labels)] = value
    return out


def write_textfile(path: Path, metrics: Metrics, *, keep_counters: bool = True) -> None:
    """Replace ``path`` atomically (temp file in the same directory, fsync, rename), mode 0644.

    node-exporter reads ``*.prom`` only, so the temp file (``.name.<pid>.tmp``) is never half-read.
    """
    path = Path(path)
    if path.suffix != ".prom":
        raise UserError(f"{path}: node-exporter's textfile collector reads only *.prom files")
    if not path.parent.is_dir():
        raise UserError(f"{path.parent}: no such directory for the metrics textfile")
    if keep_counters:
        try:
            metrics.carry_counters(parse_samples(path.read_text(encoding="utf-8"), REMEDIATIONS))
        except FileNotFoundError:
            pass
        except (OSError, UnicodeDecodeError) as exc:
            raise UserError(f"{path}: cannot read the previous metrics ({exc})") from None
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(metrics.render())
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise UserError(f"{path}: cannot write metrics ({exc.strerror or exc})") from None
    try:
        fd = os.open(path.parent, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)  # the rename itself survives a crash
    except OSError:
        pass
    finally:
        os.close(fd)


def _segment(key: str, value: str) -> str:
    """A grouping-key path segment; values with "/" (or empty) go base64url-encoded as the Pushgateway wants."""
    if not value or "/" in value:
        return f"{key}@base64/{base64.urlsafe_b64encode(value.encode()).decode() or '='}"
    return f"{key}/{urllib.parse.quote(value, safe='')}"


def group_url(gateway: str, job: str, grouping: Mapping[str, str] | None = None) -> str:
    """``<gateway>/metrics/job/<job>/<label>/<value>…`` for one Pushgateway group."""
    parts = [_segment("job", job), *(_segment(k, v) for k, v in sorted((grouping or {}).items()))]
    return gateway.rstrip("/") + "/metrics/" + "/".join(parts)


def _request(url: str, method: str, body: bytes | None, timeout: float) -> str:
    request = urllib.request.Request(url, data=body, method=method,
                                     headers={"Content-Type": CONTENT_TYPE} if body is not None else {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode("utf-8", "replace").strip().splitlines()
        raise PushError(f"{url}: Pushgateway answered HTTP {exc.code}"
                        f"{': ' + detail[0] if detail else ''}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise PushError(f"{url}: cannot reach the Pushgateway ({reason})") from None


def push(gateway: str, metrics: Metrics, *, job: str = "vllm-remedy", grouping: Mapping[str, str] | None = None,
         keep_counters: bool = True, unchecked: set[str] | None = None, timeout: float = 10.0) -> None:
    """Replace this job's group on the Pushgateway (HTTP PUT) with ``metrics``.

    PUT, not POST: a drift that was fixed, or a toggle that expired, must disappear rather than linger.
    With ``keep_counters`` the group's published remediation totals are read first and carried over, and
    the series of ``unchecked`` hosts (this run failed on them) are kept as published.
    """
    if not re.match(r"https?://", gateway):
        raise UserError(f"{gateway}: expected the Pushgateway's http(s):// URL")
    if keep_counters or unchecked:
        where = {"job": job, **(grouping or {})}
        published = _request(gateway.rstrip("/") + "/metrics", "GET", None, timeout)
        if keep_counters:
            metrics.carry_counters(parse_samples(published, REMEDIATIONS, where))
        if unchecked:
            metrics.carry_unchecked(published, unchecked, where)
    _request(group_url(gateway, job, grouping), "PUT", metrics.render().encode("utf-8"), timeout)
