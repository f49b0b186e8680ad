"""The project's annotations: known-good marks (on ReplicaSets), last action + reason, timed toggles.

Why on ReplicaSets: a ReplicaSet *is* a revision — its template never changes and survives rollbacks —
so a mark there names exactly what was confirmed. The Deployment must never carry a known-good mark:
the deployment controller copies Deployment annotations onto every new ReplicaSet, which would bless
an untested revision. Toggles record an RFC 3339 expiry and the exact prior values so any later run can
revert them without guessing; the record is data, so a revert checks it against the object before trusting it.
A malformed toggle record is reported (``scan_toggles``), never a reason for a deploy to stop.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from vllm_remedy.errors import UserError
from vllm_remedy.kube.history import CHANGE_CAUSE, canonical_template, without_restart
from vllm_remedy.policy.model import DEFAULT_ANNOTATION_PREFIX

#: The policy's ``annotation_prefix`` default; owned there, so keys written without a policy still match.
DEFAULT_PREFIX = DEFAULT_ANNOTATION_PREFIX
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")


def rfc3339(seconds: float) -> str:
    """UTC, second precision, ``Z`` — how Kubernetes writes timestamps."""
    return datetime.fromtimestamp(seconds, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_rfc3339(value: str, where: str = "timestamp") -> float:
    """Seconds since the epoch; a one-line UserError naming ``where`` when the text is not RFC 3339."""
    try:
        moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except (ValueError, AttributeError) as exc:
        raise UserError(f"{where}: {value!r} is not an RFC 3339 timestamp (e.g. 2025-01-31T12:00:00Z)") from exc
    if moment.tzinfo is None:
        raise UserError(f"{where}: {value!r} has no time zone; expected RFC 3339 such as 2025-01-31T12:00:00Z")
    return moment.timestamp()


def stamp_seconds(value: Any) -> float | None:
    """``parse_rfc3339`` for stamps read as evidence: None when absent or unreadable (an undated record, never an
    error: a garbled stamp in someone's annotation must not stop a restore)."""
    try:
        return parse_rfc3339(str(value)) if value else None
    except UserError:
        return None


#: The suffixes of a toggle's annotations (``<prefix><name>-expires`` and so on).
TOGGLE_SUFFIXES = ("-expires", "-prior", "-digest")
#: Toggle name → the boolean vLLM flag it turns on: a flag that runs only for as long as its toggle's record says.
TOGGLE_FLAGS = {"enforce-eager": "enforce-eager"}


def toggle_flags_on(flags: Mapping[str, str]) -> list[str]:
    """The toggles' flags a server runs with (``flags``: its effective flags, string values)."""
    return [f for f in TOGGLE_FLAGS.values() if flags.get(f, "false") not in ("false", "False", "0")]


def canonical_json(value: Any) -> str:
    """The one JSON spelling of ``value`` (sorted keys, no spaces), so a record reads back exactly as written."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True)
class Keys:
    """Annotation keys under one prefix (a DNS subdomain you own, ending in ``/``)."""

    prefix: str = DEFAULT_PREFIX

    def __post_init__(self) -> None:
        domain = self.prefix[:-1]
        if not self.prefix.endswith("/") or len(domain) > 253 or not _DNS_SUBDOMAIN.fullmatch(domain):
            raise UserError(f"annotation prefix {self.prefix!r}: expected a DNS subdomain followed by '/', "
                            "e.g. vllm-remedy.io/")
        if domain == "kubernetes.io" or domain.endswith(".kubernetes.io") or domain.endswith(".k8s.io"):
            raise UserError(f"annotation prefix {self.prefix!r}: kubernetes.io and k8s.io are reserved")

    def key(self, name: str) -> str:
        """Prefix a name, refusing names a Kubernetes annotation key cannot hold."""
        if not _NAME.fullmatch(name) or len(name) > 63:
            raise UserError(f"annotation name {name!r}: expected at most 63 alphanumerics, '-', '_' or '.'")
        return self.prefix + name

    @property
    def known_good(self) -> str:
        """Marks a revision proven to serve, the target a rollback returns to."""
        return self.key("known-good")

    @property
    def known_good_reason(self) -> str:
        """Why a revision was marked known-good, for the operator who reads it later."""
        return self.key("known-good-reason")

    @property
    def last_action(self) -> str:
        """The last remedy applied, so a rerun can see what was already tried."""
        return self.key("last-action")

    @property
    def last_reason(self) -> str:
        """Why the last remedy was applied, kept on the object for audit."""
        return self.key("last-action-reason")

    @property
    def last_action_at(self) -> str:
        """When the last remedy was applied, kept for audit."""
        return self.key("last-action-at")

    @property
    def last_action_template(self) -> str:
        """A digest of the pod template our last write left: whether the revision running now is the one we made
        (a colleague's edit since copies our annotations onto its new ReplicaSet, but not this template)."""
        return self.key("last-action-template")

    @property
    def change_id(self) -> str:
        """The id of the last write we made; after a lost answer, its presence proves the write landed."""
        return self.key("change-id")

    @property
    def fallback_prior(self) -> str:
        """On an HTTPRoute: its rules before load shedding shifted traffic to the fallback, so shifting back restores
        exactly those (canonical JSON)."""
        return self.key("fallback-prior-rules")

    def toggle_expires(self, toggle: str) -> str:
        """When a timed toggle must be reverted; drift flags it once past."""
        return self.key(f"{toggle}-expires")

    def toggle_prior(self, toggle: str) -> str:
        """The argv before a toggle, so expiry restores exactly what ran."""
        return self.key(f"{toggle}-prior")

    def toggle_digest(self, toggle: str) -> str:
        """The digest older versions wrote next to the prior record: no longer written nor trusted (anyone who can
        edit the record can recompute an unkeyed hash), only dropped with its toggle."""
        return self.key(f"{toggle}-digest")

    def toggle_keys(self, toggle: str) -> tuple[str, str, str]:
        """Every annotation one toggle owns: dropped together when it comes off."""
        return self.toggle_expires(toggle), self.toggle_prior(toggle), self.toggle_digest(toggle)

    def is_toggle_key(self, key: str) -> bool:
        """Whether ``key`` records some toggle: it belongs to the template that had it, never copied by a rollback."""
        return self.ours(key) and key.endswith(TOGGLE_SUFFIXES)

    def ours(self, key: str) -> bool:
        """Whether an annotation is ours, so only our own keys are ever rewritten."""
        return key.startswith(self.prefix)

    @property
    def crashed(self) -> str:
        """On a ReplicaSet: its pods were seen crash-looping (failure class + cluster time, JSON): Events expire
        after an hour, this record does not, so restore never rolls back to a revision already seen dying."""
        return self.key("crashed")

    @property
    def known_good_withdrawn(self) -> str:
        """On a ReplicaSet: why and when its known-good mark was taken back (it crash-looped or died under load)."""
        return self.key("known-good-withdrawn")

    @property
    def deployment_fields(self) -> str:
        """On a ReplicaSet, next to the mark: the Deployment-level fields (strategy, minReadySeconds, ...) it was
        confirmed with (JSON), which a rollback of the template alone would not bring back."""
        return self.key("deployment-fields")

    def mark_keys(self) -> tuple[str, ...]:
        """Keys that belong on a ReplicaSet only, never on a Deployment (the controller would copy them onto
        every new ReplicaSet: a mark would bless, a crash record would condemn, an untested revision)."""
        return (self.known_good, self.known_good_reason, self.crashed, self.known_good_withdrawn,
                self.deployment_fields)


def action_annotations(keys: Keys, action: str, reason: str, at: float,
                       template: Mapping[str, Any] | None = None) -> dict[str, str]:
    """What every write sets on the Deployment: the last action, why, when, kubectl's change-cause, and (for a
    write of its pod template) the digest of the template it leaves."""
    notes = {
        CHANGE_CAUSE: f"vllm-remedy {action}: {reason}",
        keys.last_action: action,
        keys.last_reason: reason,
        keys.last_action_at: rfc3339(at),
    }
    if template is not None:
        notes[keys.last_action_template] = template_digest(template)
    return notes


def template_digest(template: Mapping[str, Any] | None) -> str:
    """A short digest of the pods a template runs (``kube.history.same_pod_spec``: hash label and ``rollout
    restart``'s stamp aside, so a restart of the revision we made is still ours)."""
    text = json.dumps(canonical_template(without_restart(template)), sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def known_good_annotations(keys: Keys, at: float, reason: str) -> dict[str, str]:
    """The mark ``confirm`` puts on a ReplicaSet."""
    return {keys.known_good: rfc3339(at), keys.known_good_reason: reason}


def is_known_good(keys: Keys, obj: Mapping[str, Any]) -> bool:
    """Whether an object carries the known-good mark; an empty value does not count."""
    notes = (obj.get("metadata") or {}).get("annotations") or {}
    return bool(notes.get(keys.known_good))


@dataclass(frozen=True)
class Toggle:
    """A temporary change: ``prior`` holds the exact values to restore (e.g. the container's argv) — data anyone
    who may edit annotations can write, so ``remedies.enforce_eager`` decides when it may be restored."""

    name: str
    expires: str  # RFC 3339
    prior: Any

    def expires_at(self) -> float:
        """The expiry as epoch seconds; a malformed stamp is a UserError naming the toggle."""
        return parse_rfc3339(self.expires, f"toggle {self.name} expiry")

    def expired(self, now: float) -> bool:
        """Due at the expiry instant itself, so a toggle never outlives its promised end."""
        return now >= self.expires_at()


@dataclass(frozen=True)
class Malformed:
    """A toggle record that cannot be read: its name, its keys present, and why (one line)."""

    name: str
    keys: tuple[str, ...]
    problem: str


def toggle_annotations(keys: Keys, toggle: Toggle) -> dict[str, str]:
    """Annotations that record a toggle; ``prior`` is stored as canonical JSON so it restores exactly."""
    parse_rfc3339(toggle.expires, f"toggle {toggle.name} expiry")
    notes = {keys.toggle_expires(toggle.name): toggle.expires,
             keys.toggle_prior(toggle.name): canonical_json(toggle.prior)}
    return notes


def scan_toggles(keys: Keys, notes: Mapping[str, str]) -> tuple[list[Toggle], list[Malformed]]:
    """Every toggle recorded in ``notes``, and every record that cannot be read (never raises)."""
    found: list[Toggle] = []
    bad: list[Malformed] = []
    suffix = "-expires"
    for key in sorted(notes):
        if not (keys.ours(key) and key.endswith(suffix)):
            continue
        name = key[len(keys.prefix): -len(suffix)]
        present = tuple(k for k in (key, keys.prefix + name + "-prior", keys.prefix + name + "-digest") if k in notes)
        prior_key = keys.prefix + name + "-prior"
        try:
            Toggle(name, str(notes[key]), None).expires_at()  # validate now, not at revert time
            if prior_key not in notes:
                raise UserError(f"annotation {key}: toggle {name!r} has an expiry but no {prior_key} to restore")
            try:
                prior = json.loads(notes[prior_key])
            except ValueError as exc:
                raise UserError(f"annotation {prior_key}: not valid JSON") from exc
            toggle = Toggle(name, str(notes[key]), prior)
        except UserError as exc:
            bad.append(Malformed(name, present, str(exc)))
            continue
        found.append(toggle)
    return found, bad


def read_toggles(keys: Keys, notes: Mapping[str, str]) -> list[Toggle]:
    """Every toggle recorded in ``notes``; a malformed record is a UserError naming its key (drift reports it)."""
    found, bad = scan_toggles(keys, notes)
    if bad:
        raise UserError(bad[0].problem)
    return found
