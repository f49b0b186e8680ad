"""Timed toggles (runbook step 4's ``--enforce-eager`` "as a temporary measure only"), pure.

A toggle is recorded on the Deployment as annotations (``kube.annotations``): its RFC 3339 expiry and the
*exact* prior command line of the vLLM container (``command`` and ``args`` as JSON). Any later run of any
deploy — and ``vllm-remedy expire`` — reverts an expired toggle, so nothing depends on remembering how the
flag was spelled.

The prior record is data anyone who may edit the Deployment's annotations can write, so it is never authority
for what to run: a revert is a write like any other. The exact prior is restored only when it *is* the running
container with the toggle's flag removed, token for token — same container, command, script text, model and every
other flag, and no spelling of the flag at all (``--enforce-eager false``, ``=0``, ``--no-…``) — which is what an
honest record always is, unless the container changed since (a budget fix, a
hand edit: restoring would silently undo it). Anything else (``sh -c "echo PWNED; vllm serve … --max-model-len
131072"``, another container, the flag itself on) and only the toggle's flag is removed, the revert saying why in
one line. Either way the revert runs the same flags, so one policy check and one memory prediction judge it.

No digest is kept: an unkeyed hash of the record is recomputed by whoever forges the record, and the comparison
with the running container above decides everything a digest could. A ``-digest`` annotation left by an older
version is dropped with its toggle and otherwise ignored.

A malformed record (``tomorrow`` as expiry, no prior, bad JSON) makes the toggle *unknown*: every deploy
warns once and goes on, and leaves the annotations where they are for a person (drift reports them) —
only the eager deploy itself replaces them (on) or drops them (off), and a rollback never copies them back.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from vllm_remedy.errors import UserError
from vllm_remedy.kube.annotations import (
    TOGGLE_FLAGS,
    Keys,
    Malformed,
    Toggle,
    rfc3339,
    scan_toggles,
    toggle_annotations,
)
from vllm_remedy.policy import Policy, format_duration, parse_duration
from vllm_remedy.vllm.cmdline import ServerCommand, find_server

#: The toggle's name in annotations (``<prefix>enforce-eager-expires`` / ``-prior``).
EAGER = "enforce-eager"
#: How ``malformed_warning`` starts (drift's enforce-eager check says the same, so its plan leaves it out).
UNREADABLE = "warning: ignoring the unreadable record of toggle "


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


def record(keys: Keys, expires: str, prior: Mapping[str, Any], name: str = EAGER) -> dict[str, str]:
    """The toggle's annotations: its expiry and the exact prior argv."""
    return toggle_annotations(keys, Toggle(name, expires, dict(prior)))


def switch_on(template: Mapping[str, Any], keys: Keys, now: float, seconds: int, container: str | None = None,
              name: str = EAGER) -> tuple[dict[str, Any], dict[str, str]]:
    """The template with the toggle's flag on, and the annotations recording its expiry and exact prior argv."""
    prior = argv_record(template, container)
    server = _server(template, container)
    edited = server.edit({TOGGLE_FLAGS[name]: "true"})
    new = copy.deepcopy(dict(template))
    containers = new["spec"]["containers"]
    for i, c in enumerate(containers):
        if c.get("name") == server.container_name:
            containers[i] = edited
    return new, record(keys, rfc3339(now + seconds), prior, name)


def active(keys: Keys, notes: Mapping[str, str], name: str = EAGER) -> Toggle | None:
    """The recorded toggle ``name``, or None (also when its record is malformed: see ``malformed``)."""
    return next((t for t in scan_toggles(keys, notes)[0] if t.name == name), None)


def beyond_limit(toggle: Toggle, now: float, limit: float | None) -> str | None:
    """Why ``toggle``'s expiry cannot be ours (one line), None when it may be: we stamp at most ``limit`` seconds
    (the policy's ``enforce_eager.max_duration``) after cluster time, so a later expiry (2099) was written by
    someone else, or under another policy — a toggle it would keep on for good."""
    if limit is None or toggle.expires_at() <= now + limit:
        return None
    return (f"expiry {toggle.expires} is more than {format_duration(int(limit))} ahead (the policy's "
            "enforce_eager.max_duration), so no toggle under this policy set it: treated as expired")


def due(toggle: Toggle, now: float, limit: float | None = None) -> str | None:
    """Why ``toggle`` comes off now (one line: expired, or an expiry beyond ``limit``), None while it may stay."""
    if toggle.expired(now):
        return f"toggle expired {toggle.expires}"
    return beyond_limit(toggle, now, limit)


def expired(keys: Keys, notes: Mapping[str, str], now: float, limit: float | None = None) -> list[Toggle]:
    """Every readable toggle due at ``now`` (cluster time): expired, or with an expiry beyond ``limit`` seconds."""
    return [t for t in scan_toggles(keys, notes)[0] if due(t, now, limit) is not None]


def malformed(keys: Keys, notes: Mapping[str, str]) -> list[Malformed]:
    """Toggle records that cannot be read: unknown toggles, to warn about and leave alone."""
    return scan_toggles(keys, notes)[1]


def malformed_warning(bad: Malformed) -> str:
    """The one line every deploy prints for an unreadable toggle record, and what it does about it."""
    return (f"{UNREADABLE}{bad.name} ({bad.problem}); left in place "
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


def _argv(value: Any) -> bool:
    return value is None or (isinstance(value, list) and all(isinstance(v, str) for v in value))


def _with_argv(container: Mapping[str, Any], prior: Mapping[str, Any]) -> dict[str, Any]:
    """``container`` running the prior record's ``command``/``args`` (an absent one removed), nothing else changed."""
    out = copy.deepcopy(dict(container))
    for key in ("command", "args"):
        if prior.get(key) is None:
            out.pop(key, None)
        else:
            out[key] = copy.deepcopy(prior[key])
    return out


def _argv_of(container: Mapping[str, Any]) -> tuple[Any, Any]:
    return container.get("command"), container.get("args")


def _spellings(server: ServerCommand, flag: str) -> list[str]:
    """Every occurrence of ``flag`` in ``server``'s argv, as written (``--enforce-eager false``, ``--no-enforce-eager``,
    ``--enforce_eager=0``, a unique prefix): the parser resolves each spelling the way vLLM's argparse does."""
    return [" ".join(t.value for t in o.tokens) for o in server.options if o.name == flag]


def prior_mismatch(template: Mapping[str, Any], toggle: Toggle, container: str | None = None) -> str | None:
    """Why ``toggle``'s prior argv may not be restored over ``template`` (one line); None when it may.

    It may when the prior, as written, *is* the running vLLM container with the toggle's flag removed by our
    editor, token for token — so it spells the flag nowhere, in no form. Comparing both with the flag removed
    would let a forged prior add words (``--enforce-eager false``, which vLLM rejects) that our editor then hides.
    """
    flag = TOGGLE_FLAGS.get(toggle.name, toggle.name)
    now = _server(template, container)
    prior = toggle.prior
    if not isinstance(prior, Mapping) or not _argv(prior.get("command")) or not _argv(prior.get("args")):
        return "the prior-argv record is not a container's command/args (lists of strings)"
    if prior.get("container") != now.container_name:
        return (f"the prior-argv record names container {prior.get('container')!r}, not the vLLM container "
                f"{now.container_name!r}")
    restored = _with_argv(now.container, prior)
    try:
        then = find_server({"containers": [restored]}, now.container_name)
    except UserError as exc:
        return f"the prior argv does not run a vLLM server this tool can read ({exc})"
    without = _argv_of(now.edit({}, [flag]))
    spelled = _spellings(then, flag)
    if _argv_of(restored) == without and not spelled:
        return None
    names = dict.fromkeys([*now.flags, *then.flags])
    changed = [k for k in names if k != flag and now.flags.get(k) != then.flags.get(k)]
    if changed:
        return (f"it differs from the running container in {', '.join('--' + k for k in changed)} too (changed "
                "since the toggle was set, or the record was edited)")
    if spelled and _argv_of(then.edit({}, [flag])) == without:
        return f"the prior argv spells --{flag} itself ({'; '.join(spelled)})"
    return "it differs from the running container outside its vLLM flags (command, script, entrypoint or model)"


def _replace(template: Mapping[str, Any], container: Mapping[str, Any]) -> dict[str, Any]:
    new = copy.deepcopy(dict(template))
    spec = new.get("spec") or {}
    for key in ("containers", "initContainers"):
        items = spec.get(key) or []
        for i, c in enumerate(items):
            if isinstance(c, Mapping) and c.get("name") == container.get("name"):
                items[i] = copy.deepcopy(dict(container))
                return new
    raise UserError(f"container {container.get('name')!r}: gone from the template")


def revert(template: Mapping[str, Any], keys: Keys, toggle: Toggle, container: str | None = None,
           why_due: str | None = None) -> Revert:
    """Take ``toggle`` off ``template``: the exact prior argv when it is the running container without the toggle's
    flag (``prior_mismatch``), else just the flag, saying why. ``why_due`` (``due``) ends the line."""
    flag = TOGGLE_FLAGS.get(toggle.name, toggle.name)
    when = why_due or f"toggle expired {toggle.expires}"
    drop: dict[str, None] = dict.fromkeys(keys.toggle_keys(toggle.name))
    before = _server(template, container)
    why = prior_mismatch(template, toggle, container)
    if why is None:
        return Revert(toggle, _replace(template, _with_argv(before.container, toggle.prior)), drop, True,
                      f"restore the exact argv from before --{flag} ({when})")
    if flag not in before.flags:
        return Revert(toggle, copy.deepcopy(dict(template)), drop, False,
                      f"--{flag} is already off; drop the toggle record ({when})")
    return Revert(toggle, _replace(template, before.edit({}, [flag])), drop, False,
                  f"remove --{flag} only: {why} ({when}), so the prior argv is not restored")


#: The prior record's key for the rollout strategy a toggle's write switched (a full pool): ``before`` / ``written``.
STRATEGY = "strategy"


def with_strategy(prior: Mapping[str, Any], before: Mapping[str, Any], written: Mapping[str, Any]) -> dict[str, Any]:
    """The prior record, also holding the strategy the toggle's write replaced and the one it wrote, so its revert
    puts the Deployment back, not only the argv."""
    return {**prior, STRATEGY: {"before": copy.deepcopy(dict(before)), "written": copy.deepcopy(dict(written))}}


def switched(toggle: Toggle) -> Mapping[str, Any] | None:
    """The strategy record of ``toggle`` (``before``, ``written``), None when it switched none (or it is unreadable:
    the argv revert goes on, the strategy left as it is)."""
    prior = toggle.prior if isinstance(toggle.prior, Mapping) else {}
    rec = prior.get(STRATEGY)
    if not isinstance(rec, Mapping) or not all(isinstance(rec.get(k), Mapping) for k in ("before", "written")):
        return None
    if rec["before"].get("type", "RollingUpdate") not in ("RollingUpdate", "Recreate"):
        return None
    return rec


def strategy_back(toggle: Toggle, current: Mapping[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
    """The strategy to put back with ``toggle``'s revert, or None and why not (None, None: it switched none). Only
    while the Deployment still has the strategy the toggle wrote: a colleague's later change stays."""
    rec = switched(toggle)
    if rec is None:
        return None, None
    if dict(current) != dict(rec["written"]):
        return None, ("the rollout strategy the toggle switched was changed since; it is left as it is")
    return copy.deepcopy(dict(rec["before"])), None
