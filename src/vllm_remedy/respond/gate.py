"""Whether an routed alert may act now: policy mode, one action at a time per host, cool-down, dedup (pure).

Alertmanager repeats a firing alert every ``repeat_interval`` and re-sends a group when any alert in it changes;
each repeat carries the same fingerprint. A rollback needs minutes to show whether it helped, so after an action
on a host nothing acts on it again until the policy's ``respond.cooldown`` has passed since that action ended.
What this process remembers is lost on restart and not shared between replicas, so before acting the responder
also reads the Deployment: every deploy that writes stamps ``<prefix>last-action-at`` there (:func:`stamped`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from vllm_remedy.kube.annotations import Keys, stamp_seconds

RUN, DRY_RUN, SKIP = "run", "dry-run", "skip"
#: Seconds a stamp may lie ahead of the cluster's clock (the Date header's whole seconds, a write racing the read);
#: further ahead it was not written by a deploy and must not mute the responder until then.
FUTURE_SLACK = 60.0


@dataclass(frozen=True)
class Decision:
    """``kind`` is RUN, DRY_RUN or SKIP; ``reason`` is the log line's tail."""

    kind: str
    reason: str


@dataclass
class Gate:
    """What has run where and when, in each host's cluster time (``respond.clock``: the clock the deploys stamp
    ``last-action-at`` in). Not thread-safe: the server holds a lock around it."""

    running: set[str] = field(default_factory=set)
    last_action: dict[str, float] = field(default_factory=dict)  # host -> when its last action started or ended
    seen: dict[str, tuple[str, float, float]] = field(default_factory=dict)  # fingerprint -> (host, at, cool-down)

    def repeat(self, fingerprint: str, now: float | Callable[[str], float | None],
               cooldown: float | None = None) -> Decision | None:
        """SKIP for an alert that led to an action less than that host's cool-down ago (``cooldown``: the policy's
        value now, else the one the action was decided under), asked before routing: a repeat names the pod that
        paged, which a rollback has usually replaced by then. ``now`` is the time, or how to tell the time of the
        host the alert acted on (None: not known yet, no verdict)."""
        seen = self.seen.get(fingerprint)
        if seen is None:
            return None
        host, at, stored = seen
        moment = now(host) if callable(now) else now
        limit = stored if cooldown is None else cooldown
        if moment is not None and moment - at < limit:
            return Decision(SKIP, f"duplicate: alert {fingerprint} led to an action {moment - at:.0f}s ago "
                            f"(cool-down {limit:.0f}s)")
        return None

    def decide(self, host: str, fingerprint: str, mode: str, cooldown: float, now: float) -> Decision:
        """The decision for one firing alert routed to ``host``; RUN and DRY_RUN mark the host busy."""
        if mode == "off":
            return Decision(SKIP, "policy respond.mode is off")
        if host in self.running:
            return Decision(SKIP, f"an action is already running on {host}")
        repeat = self.repeat(fingerprint, now, cooldown)
        if repeat is not None:
            return repeat
        last = self.last_action.get(host)
        if last is not None and now - last < cooldown:
            return Decision(SKIP, f"{host} is in cool-down for another {cooldown - (now - last):.0f}s")
        self.running.add(host)
        self.seen[fingerprint] = (host, now, cooldown)
        self.last_action[host] = now
        return Decision(RUN if mode == "auto" else DRY_RUN, f"mode {mode}")

    def release(self, host: str, fingerprint: str, last: float) -> None:
        """A RUN decided here was skipped after all (the cluster's stamp): free the host, forget the alert, and
        count its cool-down from ``last`` (the stamp's moment, cluster time) instead."""
        self.running.discard(host)
        self.seen.pop(fingerprint, None)
        self.last_action[host] = last

    def finished(self, host: str, now: float) -> None:
        """The action on ``host`` ended: the cool-down counts from now."""
        self.running.discard(host)
        self.last_action[host] = now


def stamped(annotations: Mapping[str, str], prefix: str, cooldown: float, now: float) -> tuple[Decision, float] | None:
    """SKIP (and the stamp's age in seconds) when the Deployment's last action, by anyone, is within ``cooldown``
    of ``now`` — the cluster's clock (epoch seconds), which the deploys stamp in; None when there is no stamp, an
    unreadable one, or an old one."""
    keys = Keys(prefix)
    at = annotations.get(keys.last_action_at)
    moment = stamp_seconds(at)
    if moment is None:
        return None
    age = now - moment
    if age >= cooldown or age < -FUTURE_SLACK:  # a stamp from the cluster's future is no one's action: not believed
        return None
    age = max(age, 0.0)
    by = annotations.get(keys.last_action) or "unknown"
    return Decision(SKIP, f"cool-down: last action at {at} by {by} ({cooldown - age:.0f}s left)"), age
