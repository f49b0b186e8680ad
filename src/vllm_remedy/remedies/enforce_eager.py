"""Timed toggles (runbook step 4's ``--enforce-eager`` "as a temporary measure only"), pure.

A toggle is recorded on the Deployment as two annotations (``kube.annotations``): its RFC 3339 expiry
and the *exact* prior command line of the vLLM container (``command`` and ``args`` as JSON). Any later
run of any deploy — and ``vllm-remedy expire`` — reverts an expired toggle from that record, so nothing
depends on remembering how the flag was spelled or where it was inserted.

Why "exact, unless someone edited since": when the container's argv is the prior argv plus only our
flag, the prior argv is restored byte for byte. When someone changed other flags while the toggle was
on (a budget fix, a hand edit), restoring the old argv would silently undo their change, so only the
toggled flag is removed and the revert says so.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from vllm_remedy.errors import UserError
from vllm_remedy.kube.annotations import Keys, Toggle, read_toggles, rfc3339, toggle_annotations
from vllm_remedy.policy import Policy, format_duration, parse_duration
from vllm_remedy.vllm.cmdline import ServerCommand, find_server

#: The toggle's name in annotations (``<prefix>enforce-eager-expires`` / ``-prior``) and its vLLM flag.
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


def switch_on(template: Mapping[str, Any], keys: Keys, now: float, seconds: int, container: str | None = None,
              name: str = EAGER) -> tuple[dict[str, Any], dict[str, str]]:
    """The template with the toggle's flag on, and the annotations recording expiry and exact prior argv."""
    prior = argv_record(template, container)
    server = _server(template, container)
    edited = server.edit({TOGGLE_FLAGS[name]: "true"})
    new = copy.deepcopy(dict(template))
    containers = new["spec"]["containers"]
    for i, c in enumerate(containers):
        if c.get("name") == server.container_name:
            containers[i] = edited
    notes = toggle_annotations(keys, Toggle(name, rfc3339(now + seconds), prior))
    return new, notes


def active(keys: Keys, notes: Mapping[str, str], name: str = EAGER) -> Toggle | None:
    """The recorded toggle ``name``, or None."""
    return next((t for t in read_toggles(keys, notes) if t.name == name), None)


def expired(keys: Keys, notes: Mapping[str, str], now: float) -> list[Toggle]:
    """Every recorded toggle whose expiry is at or before ``now`` (cluster time)."""
    return [t for t in read_toggles(keys, notes) if t.expired(now)]


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
    """Take ``toggle`` off ``template``: the exact prior argv when only our flag was added, else just the flag."""
    prior = dict(toggle.prior) if isinstance(toggle.prior, Mapping) else {}
    flag = TOGGLE_FLAGS.get(toggle.name, toggle.name)
    drop = {keys.toggle_expires(toggle.name): None, keys.toggle_prior(toggle.name): None}
    restored = _restore(template, prior)
    before = _server(template, prior.get("container") or container)
    wanted = _server(restored, prior.get("container") or container)
    flags_now = {k: v for k, v in before.flags.items() if k != flag}
    if flags_now == {k: v for k, v in wanted.flags.items() if k != flag} and before.model == wanted.model:
        return Revert(toggle, restored, drop, True, f"restore the exact argv from before --{flag} "
                      f"(toggle expired {toggle.expires})")
    if flag not in before.flags:
        return Revert(toggle, copy.deepcopy(dict(template)), drop, False,
                      f"--{flag} is already off; drop the toggle record (expired {toggle.expires})")
    edited = before.edit({}, [flag])
    new = copy.deepcopy(dict(template))
    for i, c in enumerate(new["spec"]["containers"]):
        if c.get("name") == before.container_name:
            new["spec"]["containers"][i] = edited
    return Revert(toggle, new, drop, False, f"remove --{flag} only: other flags changed since it was set "
                  f"(toggle expired {toggle.expires}), so the prior argv is not restored over them")
