"""Timed toggles (runbook step 4's ``--enforce-eager`` "as a temporary measure only"), pure.

A toggle is recorded on the Deployment as three annotations (``kube.annotations``): its RFC 3339 expiry,
the *exact* prior command line of the vLLM container (``command`` and ``args`` as JSON), and an integrity
digest — sha256 of the prior record and of the container as the toggle wrote it (name, command, args,
image; the toggle's own flag taken out). Any later run of any deploy — and ``vllm-remedy expire`` — reverts
an expired toggle from that record, so nothing depends on remembering how the flag was spelled.

Why "exact, only when both digests match": the prior record is a command line we are about to run. If it
was edited since (``sh -c "curl …|sh; exec vllm …"`` parses to the same flags and model), or if the
container is no longer what the toggle wrote (a budget fix, a hand edit — restoring the old argv would
silently undo it), only the toggled flag is removed and the revert says why; the record itself is never
written. A toggle without a digest (written before it existed) is treated the same way. The digest is
no signature — whoever may patch the Deployment can rewrite it — but it turns a silent swap of one
annotation into a flag-only revert that names the mismatch.

A malformed record (``tomorrow`` as expiry, no prior, bad JSON) makes the toggle *unknown*: every deploy
warns once and goes on, and leaves the annotations where they are for a person (drift reports them) —
only the eager deploy itself replaces them (on) or drops them (off), and a rollback never copies them back.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from vllm_remedy.errors import UserError
from vllm_remedy.kube.annotations import (
    Keys,
    Malformed,
    Toggle,
    canonical_json,
    rfc3339,
    scan_toggles,
    sha256_of,
    toggle_annotations,
)
from vllm_remedy.policy import Policy, format_duration, parse_duration
from vllm_remedy.vllm.cmdline import ServerCommand, find_server

#: The toggle's name in annotations (``<prefix>enforce-eager-expires`` / ``-prior`` / ``-digest``).
EAGER = "enforce-eager"
#: Toggle name → the boolean vLLM flag it turns on (what the partial revert removes).
TOGGLE_FLAGS = {EAGER: "enforce-eager"}


@dataclass(frozen=True)
class Revert:
    """How one toggle comes off: the template to write, the annotations to drop, and what was done."""

    toggle: Toggle
    template: dict[str, Any]
    annotations: dict[str, None]
    exact: bool
    message: str


def _server(template: Mapping[str, Any], container: str | None) -> ServerCommand:
    return find_server(dict(template.get("spec") or {}), container)


def argv_record(template: Mapping[str, Any], container: str | None = None) -> dict[str, Any]:
    """The vLLM container's exact ``command``/``args`` (None when absent), named, as a toggle stores it."""
    server = _server(template, container)
    c = server.container
    return {"container": server.container_name, "command": copy.deepcopy(c.get("command")),
            "args": copy.deepcopy(c.get("args"))}


def ttl_seconds(ttl: str | int | float | timedelta | None, policy: Policy) -> int:
    """The toggle's duration in seconds: ``ttl`` (``"2h"``, seconds, timedelta) or the policy's maximum.

    UserError (one line) when eager mode is not allowed, the text is not a duration, or it exceeds
    ``enforce_eager.max_duration``.
    """
    rule = policy.enforce_eager
    if not rule.allowed:
        raise UserError(f"policy {policy.source}: enforce_eager.allowed is false; --enforce-eager is not permitted")
    limit = int(rule.max_duration.total_seconds())
    if ttl is None:
        return limit
    if isinstance(ttl, timedelta):
        seconds = int(ttl.total_seconds())
    elif isinstance(ttl, (int, float)) and not isinstance(ttl, bool):
        seconds = int(ttl)
    else:
        try:
            seconds = parse_duration(str(ttl))
        except ValueError as exc:
            raise UserError(f"ttl: {exc}") from exc
    if seconds <= 0:
        raise UserError(f"ttl: {ttl!r} must be positive")
    if seconds > limit:
        raise UserError(f"ttl: {format_duration(seconds)} exceeds the policy's enforce_eager.max_duration "
                        f"{format_duration(limit)} ({policy.source})")
    return seconds


def _is_on(value: str | None) -> bool:
    return value is not None and value not in ("false", "False", "0")


def written_record(template: Mapping[str, Any], flag: str, container: str | None = None) -> dict[str, Any]:
    """The vLLM container as a toggle leaves it, its own ``flag`` taken out: what the written digest covers."""
    server = _server(template, container)
    c = server.edit({}, [flag]) if flag in server.flags else server.container
    return {"container": server.container_name, "command": copy.deepcopy(c.get("command")),
            "args": copy.deepcopy(c.get("args")), "image": c.get("image")}


def integrity(prior: Any, written: Mapping[str, Any]) -> str:
    """The digest annotation: sha256 of the prior record and of the written container, as canonical JSON."""
    return canonical_json({"prior": sha256_of(prior), "written": sha256_of(dict(written))})


def record(keys: Keys, expires: str, prior: Mapping[str, Any], written: Mapping[str, Any],
           container: str | None = None, name: str = EAGER) -> dict[str, str]:
    """The toggle's annotations: expiry, exact prior argv, and the digest of both it and the template written."""
    digest = integrity(prior, written_record(written, TOGGLE_FLAGS.get(name, name), container))
    return toggle_annotations(keys, Toggle(name, expires, dict(prior), digest))


def switch_on(template: Mapping[str, Any], keys: Keys, now: float, seconds: int, container: str | None = None,
              name: str = EAGER) -> tuple[dict[str, Any], dict[str, str]]:
    """The template with the toggle's flag on, and the annotations recording expiry, exact prior argv, digest."""
    prior = argv_record(template, container)
    server = _server(template, container)
    edited = server.edit({TOGGLE_FLAGS[name]: "true"})
    new = copy.deepcopy(dict(template))
    containers = new["spec"]["containers"]
    for i, c in enumerate(containers):
        if c.get("name") == server.container_name:
            containers[i] = edited
    return new, record(keys, rfc3339(now + seconds), prior, new, container, name)


def active(keys: Keys, notes: Mapping[str, str], name: str = EAGER) -> Toggle | None:
    """The recorded toggle ``name``, or None (also when its record is malformed: see ``malformed``)."""
    return next((t for t in scan_toggles(keys, notes)[0] if t.name == name), None)


def expired(keys: Keys, notes: Mapping[str, str], now: float) -> list[Toggle]:
    """Every readable toggle whose expiry is at or before ``now`` (cluster time)."""
    return [t for t in scan_toggles(keys, notes)[0] if t.expired(now)]


def malformed(keys: Keys, notes: Mapping[str, str]) -> list[Malformed]:
    """Toggle records that cannot be read: unknown toggles, to warn about and leave alone."""
    return scan_toggles(keys, notes)[1]


def malformed_warning(bad: Malformed) -> str:
    """The one line every deploy prints for an unreadable toggle record, and what it does about it."""
    return (f"warning: ignoring the unreadable record of toggle {bad.name} ({bad.problem}); left in place "
            f"({', '.join(bad.keys)}): check --{TOGGLE_FLAGS.get(bad.name, bad.name)} and remove them by hand")


def in_force(keys: Keys, notes: Mapping[str, str], template: Mapping[str, Any],
             container: str | None = None) -> list[str]:
    """Each temporary toggle whose flag ``template`` runs with, named with its expiry (why confirm refuses)."""
    found, bad = scan_toggles(keys, notes)
    flags = _server(template, container).flags
    out = [f"temporary toggle {t.name} is on until {t.expires}" for t in found
           if _is_on(flags.get(TOGGLE_FLAGS.get(t.name, t.name)))]
    out += [f"--{TOGGLE_FLAGS.get(b.name, b.name)} is on with an unreadable toggle record ({b.problem}), so it "
            "may be temporary" for b in bad if _is_on(flags.get(TOGGLE_FLAGS.get(b.name, b.name)))]
    return out


def untrusted(template: Mapping[str, Any], toggle: Toggle, container: str | None = None) -> str | None:
    """Why ``toggle``'s prior record may not be restored over ``template``; None when both digests match."""
    if toggle.digest is None:
        return "no integrity digest was recorded with it"
    try:
        stored = json.loads(toggle.digest)
        prior_digest, written_digest = str(stored["prior"]), str(stored["written"])
    except (ValueError, TypeError, KeyError):
        return "its digest annotation is unreadable"
    if not isinstance(toggle.prior, Mapping) or sha256_of(toggle.prior) != prior_digest:
        return "the prior-argv record does not match its digest (edited since the toggle was set)"
    try:
        now = written_record(template, TOGGLE_FLAGS.get(toggle.name, toggle.name),
                             toggle.prior.get("container") or container)
    except UserError:
        return "the container it wrote is gone"
    if sha256_of(now) != written_digest:
        return "the container changed since it was set (flags, command or image)"
    return None


def _restore(template: Mapping[str, Any], prior: Mapping[str, Any]) -> dict[str, Any]:
    new = copy.deepcopy(dict(template))
    for c in (new.get("spec") or {}).get("containers") or []:
        if c.get("name") == prior.get("container"):
            for key in ("command", "args"):
                if prior.get(key) is None:
                    c.pop(key, None)
                else:
                    c[key] = copy.deepcopy(prior[key])
            return new
    raise UserError(f"toggle: container {prior.get('container')!r} named in the prior argv is gone from the "
                    "template; remove the toggle annotations by hand after checking the flags")


def revert(template: Mapping[str, Any], keys: Keys, toggle: Toggle, container: str | None = None) -> Revert:
    """Take ``toggle`` off ``template``: the exact prior argv when its digests match, else just the flag."""
    flag = TOGGLE_FLAGS.get(toggle.name, toggle.name)
    drop: dict[str, None] = dict.fromkeys(keys.toggle_keys(toggle.name))
    why = untrusted(template, toggle, container)
    if why is None:
        return Revert(toggle, _restore(template, toggle.prior), drop, True,
                      f"restore the exact argv from before --{flag} (toggle expired {toggle.expires})")
    before = _server(template, container)
    if flag not in before.flags:
        return Revert(toggle, copy.deepcopy(dict(template)), drop, False,
                      f"--{flag} is already off; drop the toggle record (expired {toggle.expires})")
    edited = before.edit({}, [flag])
    new = copy.deepcopy(dict(template))
    for i, c in enumerate(new["spec"]["containers"]):
        if c.get("name") == before.container_name:
            new["spec"]["containers"][i] = edited
    return Revert(toggle, new, drop, False, f"remove --{flag} only: {why} (toggle expired {toggle.expires}), so "
                  "the prior argv is not restored")
