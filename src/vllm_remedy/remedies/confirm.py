"""Runbook step 6, "confirm": is the running revision good enough to be marked known-good? (pure)

The runbook's checks, each with the policy's threshold:

* every live pod of the current revision Ready, not crash-looping, and Ready for ``confirm.stable_for``
  of *cluster* time (a restart resets the Ready condition, so "Ready since" covers "stable");
* the startup log's "maximum concurrency" ≥ ``peak_concurrency`` × ``confirm.min_concurrency_ratio``;
* from each pod's ``/metrics``: KV cache usage at or below ``alerts.kv_cache_usage_percent`` and
  preemptions per minute (the counter over the time the pod has been Ready) at or below
  ``alerts.preemptions_per_minute``.

* no temporary toggle (``--enforce-eager`` for two hours) in force on the revision: a stop-gap that reverts
  itself is not a state ``restore`` should ever roll back to.
* with a ``fallback`` in the policy: the HTTPRoute sends the fallback no traffic — while it does, the primary
  is not serving its load, so nothing about it under load is confirmed (:func:`fallback_check`);
* with ``confirm.gateway_error_rate``: the policy's PromQL, evaluated by its Prometheus, at or below ``max``
  for every series (:func:`error_rate_check`). No data fails: an empty result (the query matches no series)
  or NaN (no request in the window) is no evidence that the revision serves, and a known-good mark is
  exactly such evidence — ``restore`` trusts it first. Silence must not read as health.

Only when all pass is the current ReplicaSet marked known-good; the reasons say exactly what failed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from vllm_remedy.policy import Fallback, GatewayErrorRate, Policy, format_duration
from vllm_remedy.remedies.fallback import fallback_traffic, route_name
from vllm_remedy.remedies.restore import crash_looping, ready_for

#: KV usage gauges, newest name first (vLLM 0.9.2 added kv_cache_usage_perc; older releases only gpu_...).
KV_USAGE = ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc")
PREEMPTIONS = "vllm:num_preemptions_total"
_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)")


def parse_metrics(text: str) -> dict[str, float]:
    """Prometheus text exposition → metric name → value (summed over label sets; comments skipped)."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        match = _SAMPLE.match(line.strip())
        if not match or line.startswith("#"):
            continue
        try:
            value = float(match.group(3))
        except ValueError:
            continue
        out[match.group(1)] = out.get(match.group(1), 0.0) + value
    return out


@dataclass(frozen=True)
class ConfirmResult:
    """``ok`` when every check passed; ``checks`` are the lines to print, ``failures`` the reasons."""

    ok: bool
    replicaset: str | None
    revision: int | None
    checks: tuple[str, ...] = ()
    failures: tuple[str, ...] = ()
    marked: bool = False

    @property
    def reason(self) -> str:
        """One line for a refusal: what failed when anything did, else every check."""
        return "; ".join(self.failures) if self.failures else "; ".join(self.checks)


@dataclass
class _Checks:
    lines: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    def add(self, ok: bool, text: str) -> None:
        """Record a check as an ``ok:``/``FAIL:`` line; a failure is also kept as a reason, for the refusal."""
        self.lines.append(("ok: " if ok else "FAIL: ") + text)
        if not ok:
            self.failures.append(text)


def _concurrency(pod: Mapping[str, Any], container: str | None) -> float | None:
    for c in pod.get("containers") or []:
        if container is not None and c.get("name") != container:
            continue
        report = (c.get("startup") or {}).get("report") or {}
        if report.get("max_concurrency") is not None:
            return float(report["max_concurrency"])
    return None


def confirm_revision(history: Mapping[str, Any], pods: Mapping[str, Any], metrics: Mapping[str, str | None],
                     policy: Policy, now: float, container: str | None = None, toggles: Sequence[str] = (),
                     gateway: Sequence[tuple[bool, str]] = ()) -> ConfirmResult:
    """Step 6's verdict. ``metrics`` maps pod name → its ``/metrics`` text (None when unreadable); ``toggles``
    names each temporary toggle in force on the revision (``remedies.enforce_eager.in_force``); ``gateway`` are
    the gateway's checks (:func:`fallback_check`, :func:`error_rate_check`) as (ok, text)."""
    current = history.get("current_revision")
    row = next((r for r in history.get("revisions") or [] if r.get("number") == current), None)
    replicaset = row.get("replicaset") if row else None
    live = [p for p in pods.get("pods") or [] if p.get("new") and not p.get("deleting")]
    old = [p["name"] for p in pods.get("pods") or [] if not p.get("new") and not p.get("deleting")]
    checks = _Checks()
    stable = policy.confirm.stable_for.total_seconds()
    checks.add(bool(live) and not old, f"revision {current}: {len(live)} pod(s) of the current revision"
               + (f", {len(old)} old pod(s) still running ({', '.join(old)})" if old else ""))
    required = policy.peak_concurrency * policy.confirm.min_concurrency_ratio
    limit_kv = policy.alerts.kv_cache_usage_percent
    limit_pre = policy.alerts.preemptions_per_minute
    for pod in live:
        name = pod["name"]
        looping = any(crash_looping(c) for c in pod.get("containers") or [])
        ready = ready_for(pod, now) or 0.0
        checks.add(bool(pod.get("ready")) and not looping and ready >= stable,
                   f"pod {name}: Ready for {format_duration_s(ready)} of the required {format_duration_s(stable)}"
                   + (", crash-looping" if looping else "") + ("" if pod.get("ready") else ", not Ready"))
        got = _concurrency(pod, container)
        shown = "unknown (no startup figures in its log)" if got is None else f"{got:.2f}x"
        checks.add(got is not None and got >= required,
                   f"pod {name}: maximum concurrency {shown} vs peak {policy.peak_concurrency} × "
                   f"{policy.confirm.min_concurrency_ratio:g} = {required:.2f}")
        text = metrics.get(name)
        if text is None:
            checks.add(False, f"pod {name}: /metrics unreadable")
            continue
        values = parse_metrics(text)
        usage = next((values[k] for k in KV_USAGE if k in values), None)
        checks.add(usage is not None and usage * 100 <= limit_kv,
                   f"pod {name}: KV cache usage {'not exported' if usage is None else f'{usage * 100:.1f}%'} "
                   f"(limit {limit_kv:g}%)")
        total = values.get(PREEMPTIONS, 0.0)
        rate = total / (ready / 60) if ready > 0 else (0.0 if total == 0 else float("inf"))
        checks.add(rate <= limit_pre, f"pod {name}: {rate:.2f} preemptions/min over {format_duration_s(ready)} "
                   f"(limit {limit_pre:g}/min)")
    for toggle in toggles:
        checks.add(False, f"{toggle}: a revision running a temporary stop-gap is not known-good (turn it off or "
                   "let it expire, then confirm)")
    if not toggles:
        checks.add(True, "no temporary toggle in force")
    for ok, text in gateway:
        checks.add(ok, text)
    return ConfirmResult(not checks.failures, replicaset, current, tuple(checks.lines), tuple(checks.failures),
                         bool(row and row.get("known_good")))


def format_duration_s(seconds: float) -> str:
    """Whole seconds as the policy writes durations (``30m``, ``1h2m3s``; ``0s``)."""
    return format_duration(int(seconds))


def fallback_check(route: Mapping[str, Any] | None, fallback: Fallback, shift_back_after: float,
                   unreadable: str | None = None) -> tuple[bool, str]:
    """The route sends the policy's fallback backend nothing (``route`` None: it could not be read, ``unreadable``
    says why)."""
    if route is None:
        return False, f"{route_name(fallback)}: cannot read it ({unreadable or 'no answer'})"
    share, said = fallback_traffic(route, fallback)
    if share is None:
        return False, f"{said} (policy fallback.route / fallback.primary)"
    if share:
        return False, (f"{said}: the fallback is temporary — deploys/restore.py shifts it back once the primary has "
                       f"been Ready for {format_duration_s(shift_back_after)}; confirm after that")
    return True, said


def error_rate_check(rule: GatewayErrorRate, series: Sequence[tuple[str, float]] | None, error: str | None = None
                     ) -> tuple[bool, str]:
    """The gateway error rate from ``rule.query``: ``series`` the answer as (series name, value), None with
    ``error`` when Prometheus gave none. Every number must be at or below ``rule.max``; no data fails."""
    limit = f"(limit {rule.max:g}, query at {rule.prometheus})"
    if series is None:
        return False, f"gateway error rate unknown: {error} {limit}"
    numbers = [(name, value) for name, value in series if not math.isnan(value)]
    if not series:
        return False, (f"gateway error rate: the query returned no data — no series matched (check its metric names "
                       f"and labels, and that Prometheus scrapes the gateway); no evidence is no confirmation {limit}")
    if not numbers:
        return False, (f"gateway error rate: NaN — no request in the query's window; no evidence is no confirmation: "
                       f"confirm again under traffic {limit}")
    odd = [(name, value) for name, value in numbers if math.isinf(value) or value < 0]
    if odd:  # a rate is finite and never negative: an answer like -Inf is a broken query, not a healthy gateway
        return False, f"gateway error rate {odd[0][1]:g} in {odd[0][0]} is not a rate; check the query {limit}"
    name, worst = max(numbers, key=lambda item: item[1])
    where = "" if len(series) == 1 else f" in {name} (worst of {len(series)} series)"
    return worst <= rule.max, f"gateway error rate {worst:.4g}{where} {limit}"
