"""vllm-remedy's own Prometheus metrics: drift found, timed overrides' expiry, remediations, last check.

Scheduled checks are short-lived processes, so nothing is served: a run collects :class:`Metrics`, then
writes them for node-exporter's textfile collector (:func:`write_textfile`, atomic) and/or pushes them to a
Pushgateway (:func:`push`). The exposition format, its parser and the Pushgateway protocol are
``prometheus_client``'s — the Prometheus project's own client — so they track Prometheus, not us. Usage::

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
import os
import re
import urllib.parse
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from vllm_remedy.errors import UserError

# prometheus_client and urllib.request (~40 ms of CPU to import) are imported where a file is written, read back
# or pushed: a drift or expire run without --metrics-file / --push only builds Metrics, or not even that.
if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry
    from prometheus_client.core import Metric

DRIFT_DETECTED = "vllm_remedy_drift_detected"
DRIFT_UNKNOWN = "vllm_remedy_drift_unknown"
OVERRIDE_EXPIRY = "vllm_remedy_override_expiry_timestamp_seconds"
REMEDIATIONS = "vllm_remedy_remediations_total"
LAST_CHECK = "vllm_remedy_last_check_timestamp_seconds"


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

Labels = tuple[str, ...]


class PushError(UserError):
    """The Pushgateway refused or could not be reached; one line naming the URL and the answer."""


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

    def collect(self) -> Iterator[Metric]:
        """The families with samples, samples sorted by labels (prometheus_client's collector protocol)."""
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        for fam in FAMILIES:
            samples = self.samples[fam.name]
            if not samples:
                continue
            family = (CounterMetricFamily if fam.type == "counter" else GaugeMetricFamily)(
                fam.name, fam.help, labels=fam.labels)
            for values in sorted(samples):
                family.add_metric(values, samples[values])
            yield family

    def registry(self) -> CollectorRegistry:
        """A registry holding only this run's samples, for prometheus_client's writers."""
        from prometheus_client import CollectorRegistry

        registry = CollectorRegistry(auto_describe=False)
        registry.register(_Collector(self))
        return registry

    def render(self) -> str:
        """Text exposition format 0.0.4, as prometheus_client writes it; "" when there are no samples."""
        from prometheus_client import generate_latest

        return generate_latest(self.registry()).decode("utf-8")


class _Collector:
    """A run's :class:`Metrics` as a registered collector (registries keep collectors in a set: hashable)."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics

    def collect(self) -> Iterator[Metric]:
        return self.metrics.collect()


def _samples(line: str) -> Iterator[tuple[str, dict[str, str], float]]:
    """The samples of one exposition line (prometheus_client's parser); nothing for a line it cannot read."""
    from prometheus_client.parser import text_string_to_metric_families

    try:
        for family in text_string_to_metric_families(line + "\n"):
            for sample in family.samples:
                yield sample.name, dict(sample.labels), float(sample.value)
    except (ValueError, TypeError, IndexError, KeyError):
        return


def parse_samples(text: str, name: str, where: Mapping[str, str] | None = None) -> dict[Labels, float]:
    """Samples of one of our families in a text exposition, keyed by the family's label values.

    ``where`` keeps only samples carrying those labels too (a Pushgateway group's job/instance). Lines that
    are not readable samples are skipped: this reads back what we (or the Pushgateway) wrote, not any input.
    """
    fam = _BY_NAME[name]
    out: dict[Labels, float] = {}
    for line in text.split("\n"):  # not splitlines(): \x1e, \x85 … may sit inside label values
        if not line.startswith(name):  # cheap pre-filter: comments, other families
            continue
        for sample, labels, value in _samples(line):
            if sample == name and all(labels.get(k) == v for k, v in (where or {}).items()):
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
    """``<gateway>/metrics/job/<job>/<label>/<value>…``: the group ``push`` replaces, as its errors name it."""
    parts = [_segment("job", job), *(_segment(k, v) for k, v in sorted((grouping or {}).items()))]
    return gateway.rstrip("/") + "/metrics/" + "/".join(parts)


def _get(url: str, timeout: float) -> str:
    """What the Pushgateway publishes now (its /metrics), to carry counters and unchecked hosts over."""
    import urllib.error
    import urllib.request

    request = urllib.request.Request(url, method="GET")
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

    PUT (prometheus_client's ``push_to_gateway``), not POST: a drift that was fixed, or a toggle that expired,
    must disappear rather than linger.
    With ``keep_counters`` the group's published remediation totals are read first and carried over, and
    the series of ``unchecked`` hosts (this run failed on them) are kept as published.
    """
    import urllib.error

    from prometheus_client import push_to_gateway

    if not re.match(r"https?://", gateway):
        raise UserError(f"{gateway}: expected the Pushgateway's http(s):// URL")
    if keep_counters or unchecked:
        where = {"job": job, **(grouping or {})}
        published = _get(gateway.rstrip("/") + "/metrics", timeout)
        if keep_counters:
            metrics.carry_counters(parse_samples(published, REMEDIATIONS, where))
        if unchecked:
            metrics.carry_unchecked(published, unchecked, where)
    url = group_url(gateway, job, grouping)
    try:
        push_to_gateway(gateway, job, metrics.registry(), grouping_key=dict(grouping or {}), timeout=timeout)
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode("utf-8", "replace").strip().splitlines()
        raise PushError(f"{url}: Pushgateway answered HTTP {exc.code}{': ' + detail[0] if detail else ''}") from None
    except (urllib.error.URLError, OSError) as exc:
        raise PushError(f"{url}: cannot reach the Pushgateway ({getattr(exc, 'reason', exc)})") from None
