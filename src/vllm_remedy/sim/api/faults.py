"""Fault injection: the API misbehaving the way real control planes do under stress.

Rules match a verb and a resource (``*`` for any) and add latency, fail a fraction of requests with
a given code, force the next N writes to 409 Conflict, or cut watches after some seconds — so game
days can prove the remedies retry, back off and re-list instead of giving up or double-writing.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import asdict, dataclass
from typing import Any

from vllm_remedy.sim.store import ApiError

Obj = dict[str, Any]
WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})
_REASONS = {429: "TooManyRequests", 500: "InternalError", 503: "ServiceUnavailable", 504: "Timeout"}


@dataclass
class FaultRule:
    """One injected failure pattern, so rehearsals prove remediation survives a flaky API server."""

    verb: str = "*"
    resource: str = "*"
    error_rate: float = 0.0
    error_code: int = 500
    latency_ms: float = 0.0
    conflicts: int = 0  # the next N matching writes fail with 409
    drop_watch_after: float | None = None  # real seconds

    def matches(self, verb: str, resource: str) -> bool:
        """A rule may name the resource with or without its group, or use * for any."""
        return self.verb in ("*", verb) and self.resource in ("*", resource, resource.partition(".")[0])


class Faults:
    """The live fault rules of one cluster; thread-safe, changed through the admin endpoint."""

    def __init__(self, rules: list[FaultRule] | None = None, seed: int | None = 0) -> None:
        """``seed`` fixes which requests an ``error_rate`` hits, so a rehearsal (and a test) that makes the
        same requests meets the same faults every time; ``None`` draws from the OS."""
        self._rules = list(rules or [])
        self._lock = threading.Lock()
        self._random = random.Random(seed)

    def set(self, config: Any) -> None:
        """Replace the rules: parsed ``FaultRule``s or the raw config ``parse`` accepts."""
        rules = config if isinstance(config, list) and all(isinstance(r, FaultRule) for r in config) else parse(config)
        with self._lock:
            self._rules = list(rules)

    def clear(self) -> None:
        """Drop every rule, so a scenario can end its fault window."""
        with self._lock:
            self._rules = []

    def describe(self) -> list[Obj]:
        """The active rules as JSON, so a test can see what is being injected."""
        with self._lock:
            return [asdict(r) for r in self._rules]

    def before(self, verb: str, resource: str, name: str | None) -> float | None:
        """Apply latency/errors for a request; returns the watch drop time (seconds) if any."""
        drop: float | None = None
        delay = 0.0
        with self._lock:
            for rule in self._rules:
                if not rule.matches(verb, resource):
                    continue
                delay += rule.latency_ms / 1000
                if rule.drop_watch_after is not None and verb == "watch":
                    drop = rule.drop_watch_after if drop is None else min(drop, rule.drop_watch_after)
                if rule.conflicts > 0 and verb in WRITE_VERBS:
                    rule.conflicts -= 1
                    err = ApiError(409, "Conflict", f'Operation cannot be fulfilled on {resource} "{name or ""}": '
                                   "the object has been modified; please apply your changes to the latest "
                                   "version and try again", {"name": name or "", "kind": resource})
                    break
                if rule.error_rate > 0 and self._random.random() < rule.error_rate:
                    code = rule.error_code
                    err = ApiError(code, _REASONS.get(code, "InternalError"), f"injected fault: {code} on {verb}")
                    break
            else:
                err = None
        if delay:
            time.sleep(delay)
        if err is not None:
            raise err
        return drop


def parse(config: Any) -> list[FaultRule]:
    """Rules from ``[{verb, resource, error_rate, error_code, latency_ms, conflicts, drop_watch_after}]``."""
    if isinstance(config, dict):
        config = config.get("rules", [])
    if not isinstance(config, list):
        raise ApiError(400, "BadRequest", "faults: expected a list of rules or {rules: [...]}")
    rules = []
    fields = set(FaultRule.__dataclass_fields__)
    for i, item in enumerate(config):
        if not isinstance(item, dict) or set(item) - fields:
            raise ApiError(400, "BadRequest", f"faults[{i}]: expected keys among {sorted(fields)}")
        try:
            rule = FaultRule(**item)
            rule.error_rate, rule.latency_ms = float(rule.error_rate), float(rule.latency_ms)
            rule.error_code, rule.conflicts = int(rule.error_code), int(rule.conflicts)
        except (TypeError, ValueError) as exc:
            raise ApiError(400, "BadRequest", f"faults[{i}]: {exc}") from exc
        if not 0 <= rule.error_rate <= 1 or not 400 <= rule.error_code <= 599:
            raise ApiError(400, "BadRequest", f"faults[{i}]: error_rate must be in [0,1], error_code 400-599")
        rules.append(rule)
    return rules
