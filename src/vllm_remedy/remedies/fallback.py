"""Runbook step 1's traffic half: move ``shift_percent`` of an HTTPRoute's traffic to the fallback backend while
the primary sheds load, and back once the primary is stable.

The fallback is temporary: once every pod of the primary has been Ready for ``fallback.shift_back_after``
(default ``confirm.stable_for``) of cluster time, the route's traffic goes back to the primary
(:func:`primary_stable`, :func:`shifted_back_route`); until then :func:`fallback_share` says how much the
fallback still carries — what ``confirm`` refuses and ``drift`` reports. Pure: route and pod facts in, routes and
verdicts out.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vllm_remedy.errors import UserError
from vllm_remedy.policy import Fallback, Policy, format_duration
from vllm_remedy.remedies.restore import crash_looping, ready_for


def _is(ref: Mapping[str, Any], backend: Any, route_namespace: str) -> bool:
    return (ref.get("name") == backend.name and (ref.get("kind") or "Service") == backend.kind
            and (ref.get("group") or "") == backend.group
            and (ref.get("namespace") or route_namespace) == (backend.namespace or route_namespace))


def _ref(backend: Any) -> dict[str, Any]:
    ref: dict[str, Any] = {"name": backend.name}
    if backend.kind != "Service" or backend.group:
        ref.update({"group": backend.group, "kind": backend.kind})
    if backend.namespace:
        ref["namespace"] = backend.namespace
    if backend.port:
        ref["port"] = backend.port
    return ref


def shifted_route(route: Mapping[str, Any], fallback: Fallback) -> dict[str, Any]:
    """The HTTPRoute with ``shift_percent`` of each rule that serves the primary moved to the fallback backend.

    UserError when no rule of the route sends traffic to the primary backend (the policy names the wrong route).
    """
    new = copy.deepcopy(dict(route))
    namespace = (route.get("metadata") or {}).get("namespace") or fallback.route.namespace
    share = fallback.shift_percent
    touched = False
    for rule in (new.get("spec") or {}).get("rules") or []:
        refs = rule.setdefault("backendRefs", [])
        primary = [r for r in refs if _is(r, fallback.primary, namespace)]
        if not primary:
            continue
        touched = True
        for ref in primary:
            ref["weight"] = 100 - share
        backups = [r for r in refs if _is(r, fallback.fallback, namespace)]
        if not backups:
            refs.append({**_ref(fallback.fallback), "weight": share})
        for ref in backups:
            ref["weight"] = share
    if not touched:
        raise UserError(f"policy fallback.primary: HTTPRoute {namespace}/{fallback.route.name} has no rule sending "
                        f"traffic to backend {fallback.primary.name}")
    return new


def _serving(route: Mapping[str, Any], fallback: Fallback) -> list[tuple[list[dict[str, Any]], list[dict[str, Any]],
                                                                         list[dict[str, Any]]]]:
    """Per rule of ``route`` that sends traffic to the primary: (its backendRefs, the primary's, the fallback's)."""
    namespace = (route.get("metadata") or {}).get("namespace") or fallback.route.namespace
    out = []
    for rule in (route.get("spec") or {}).get("rules") or []:
        refs = rule.get("backendRefs") or []
        primary = [r for r in refs if _is(r, fallback.primary, namespace)]
        if primary:
            out.append((refs, primary, [r for r in refs if _is(r, fallback.fallback, namespace)]))
    return out


def _weight(ref: Mapping[str, Any]) -> int:
    """A backendRef's weight as the Gateway API counts it: absent is 1."""
    try:
        return max(0, int(ref.get("weight", 1)))
    except (TypeError, ValueError):
        return 0


def route_name(fallback: Fallback) -> str:
    """``HTTPRoute <ns>/<name>``, how summaries and reasons name the policy's fallback route."""
    return f"HTTPRoute {fallback.route.namespace}/{fallback.route.name}"


def fallback_traffic(route: Mapping[str, Any], fallback: Fallback) -> tuple[int | None, str]:
    """:func:`fallback_share` and the sentence saying it (``HTTPRoute llm/llm sends 50% of its traffic to ...``)."""
    share = fallback_share(route, fallback)
    if share is None:
        return None, f"{route_name(fallback)} has no rule sending traffic to the primary {fallback.primary.name}"
    if not share:
        return 0, f"{route_name(fallback)} sends no traffic to the fallback {fallback.fallback.name}"
    return share, f"{route_name(fallback)} sends {share}% of its traffic to the fallback {fallback.fallback.name}"


def fallback_share(route: Mapping[str, Any], fallback: Fallback) -> int | None:
    """The percentage of traffic the route sends to the fallback backend, in its rule that sends it the most
    among those serving the primary (0: everything stays on the primary); None when no rule serves the primary."""
    rules = _serving(route, fallback)
    if not rules:
        return None
    shares = [0]
    for refs, _primary, backups in rules:
        total = sum(_weight(r) for r in refs)
        if total:
            shares.append(round(100 * sum(_weight(r) for r in backups) / total))
    return max(shares)


def shifted_back_route(route: Mapping[str, Any], fallback: Fallback, prior: str | None) -> tuple[dict[str, Any], str]:
    """The HTTPRoute with the fallback's traffic back on the primary, and how it was done.

    ``prior`` is the record the shift left (``Keys.fallback_prior``: the rules before it, canonical JSON). When
    the route's rules are still exactly what the policy's shift makes of them, they go back to that record
    byte for byte; otherwise (edited since, no or unreadable record) only the weights change: in every rule
    serving the primary the fallback gets 0 and the primary 100, and the reason says why.
    """
    new = copy.deepcopy(dict(route))
    rules = (new.get("spec") or {}).get("rules") or []
    why = "no record of the rules before the shift"
    if prior is not None:
        try:
            before = json.loads(prior)
            if not isinstance(before, list):
                raise ValueError("not a list of rules")
            shifted = shifted_route({**new, "spec": {**new["spec"], "rules": before}}, fallback)
        except (ValueError, UserError) as exc:
            why = f"the record of the rules before the shift is unreadable ({exc})"
        else:
            if shifted["spec"]["rules"] == rules:
                new["spec"]["rules"] = before
                return new, "the rules as they were before the shift"
            why = "the route was edited after the shift"
    for _refs, primary, backups in _serving(new, fallback):
        for ref in primary:
            ref["weight"] = 100
        for ref in backups:
            ref["weight"] = 0
    return new, f"weights only (primary 100, fallback 0): {why}"


def shift_back_after(policy: Policy) -> float:
    """Seconds every pod of the primary must have been Ready before the fallback's traffic goes back to it:
    ``fallback.shift_back_after``, else ``confirm.stable_for``."""
    after = policy.fallback.shift_back_after if policy.fallback is not None else None
    return (after or policy.confirm.stable_for).total_seconds()


@dataclass(frozen=True)
class Stability:
    """Whether the primary's pods have been Ready long enough to take the traffic back (``reason`` says why not)."""

    ok: bool
    reason: str
    #: Cluster time (epoch seconds) at which the least stable pod will have been Ready long enough, when known.
    at: float | None = None


def primary_stable(pods: Mapping[str, Any], now: float, seconds: float, container: str | None = None) -> Stability:
    """Every live pod of the current revision Ready, not crash-looping, for ``seconds`` of cluster time, and no old
    pod left (the rollout is over): the primary may take the traffic the fallback carries back."""
    live = [p for p in pods.get("pods") or [] if p.get("new") and not p.get("deleting")]
    old = [p["name"] for p in pods.get("pods") or [] if not p.get("new") and not p.get("deleting")]
    revision = pods.get("new_revision")
    need = format_duration(int(seconds))
    if not live:
        return Stability(False, f"no pod of revision {revision} is running")
    if old:
        return Stability(False, f"the rollout is not over ({len(old)} old pod(s) running)")
    for pod in live:
        rows = [c for c in pod.get("containers") or [] if container is None or c.get("name") == container]
        if any(crash_looping(c) for c in rows):
            return Stability(False, f"pod {pod['name']} is crash-looping")
        if ready_for(pod, now) is None:
            return Stability(False, f"pod {pod['name']} is not Ready")
    least = min(ready_for(p, now) or 0.0 for p in live)
    if least < seconds:
        return Stability(False, f"pod(s) of revision {revision} Ready for {format_duration(int(least))} of the "
                         f"required {need}", now + seconds - least)
    return Stability(True, f"{len(live)} pod(s) of revision {revision} Ready for at least {need}")
