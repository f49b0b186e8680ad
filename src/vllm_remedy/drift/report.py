"""The versioned ``DriftReport`` / ``ExpireReport``, their exit codes, human views and metrics (pure).

Exit codes follow kubectl diff / flux diff / argocd app diff: 0 in sync, 1 drift, 2 error; with
``--detailed-exitcode`` Terraform's and helm-diff's: 0 in sync, 2 drift, 1 error. Drift whose fix the deploys
refuse (the GitOps stance ``refuse``, no change predicted to fit, the policy's bounds) exits 3 in both: a deploy run
would stop at the refusal, so a scheduled job must page a human, not run the deploy — and so is a host whose checks
all pass (or are unknown) while the deploys' operations refuse on it: "in sync" under a printed refusal, exit 0, would
hide that every deploy run there exits 1. A host that could not be
checked makes the whole run an error — whatever the other hosts say — so an unreachable cluster, a failed
API call or a broken policy can never read as "no drift". Likewise a host whose checks could not judge it
(a model or GPU outside the catalogs) is ``Unknown`` and exits as drift does: unknown is not in sync —
unless its policy says ``drift: {unknown: in-sync}``. The metrics carry unknown checks either way.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from vllm_remedy.envelope import envelope
from vllm_remedy.metrics import Metrics

IN_SYNC, DRIFTED, UNKNOWN, FIX_REFUSED, ERROR = "InSync", "Drifted", "Unknown", "FixRefused", "Error"
EXIT = {False: {IN_SYNC: 0, DRIFTED: 1, UNKNOWN: 1, FIX_REFUSED: 3, ERROR: 2},
        True: {IN_SYNC: 0, DRIFTED: 2, UNKNOWN: 2, FIX_REFUSED: 3, ERROR: 1}}
_RESULT = {IN_SYNC: "NoDrift", DRIFTED: "Drift", UNKNOWN: "Unknown", FIX_REFUSED: "DriftFixRefused", ERROR: "Error"}
#: Worst first: a host that could not be checked, then drift no deploy will fix, then drift a deploy fixes.
_WORST = (ERROR, FIX_REFUSED, DRIFTED, UNKNOWN)


def _rfc3339(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def host_status(host: Mapping[str, Any]) -> str:
    """A host that could not be checked is an error, one that could not be judged unknown, never in sync:
    silence must not read as health — unless its policy accepts unknown (``drift.unknown: in-sync``, set by the
    runner as ``accept_unknown``). Drift wins over unknown, as it names something to fix; drift whose fix the deploys
    refuse is ``FixRefused``: a deploy run would stop at the refusal, so it is not drift "a run would fix"."""
    if host.get("error"):
        return ERROR
    if refusal_of(host) is not None:  # every deploy run on it stops there, whatever its checks say: never in sync
        return FIX_REFUSED
    found = {c["status"] for c in host.get("checks") or []}
    if "drift" in found:
        return DRIFTED
    return UNKNOWN if "unknown" in found and not host.get("accept_unknown") else IN_SYNC


#: The drift check of a route left shifted to the fallback, and the operation that is its fix (deploys/restore.py's
#: last step): it waits for the primary to be stable, which no edit of the Deployment replaces.
ROUTE_CHECK = "fallback-route"
SHIFT_BACK = "Shift traffic back from the fallback once the primary is stable"


def refusal_of(host: Mapping[str, Any]) -> dict[str, str] | None:
    """The operation of the fix that is refused and why (a deploy run fails the host there), else None."""
    said = next((op for op in host.get("fix") or [] if op.get("refused")), None)
    return None if said is None else {"operation": said["operation"], "reason": said["refused"]}


def _fix(host: Mapping[str, Any], drifted: list[str]) -> dict[str, Any]:
    """The fix as a deploy run would make it: its operations (refused / would change / no change / not run), how
    many would change, and the refusal a run stops at — never counted as a change."""
    ops = [op for op in host.get("fix") or [] if op.get("changes") or op.get("lines") or op.get("notRun")]
    waiting = [op["noop"] for op in host.get("fix") or [] if op.get("operation") == SHIFT_BACK and op.get("noop")]
    refused = refusal_of(host)
    changes = sum(bool(op.get("changes")) for op in ops)
    if not any(op.get("changes") or op.get("lines") for op in ops):
        ops = []  # nothing would run that says or changes anything
    notes = []
    if host.get("fix_note"):  # a kind no deploy fixes yet: checked and said, never an error
        notes.append(host["fix_note"])
    elif drifted and refused is not None:
        notes.append(f"the deploys refuse the fix ({refused['operation']}: reason above) and a run stops there: "
                     "make that change in Git or by hand")
    elif refused is not None:
        notes.append(f"no check drifted, but the deploys refuse here ({refused['operation']}: reason above) and every "
                     "deploy run on this host stops there: make that change in Git or by hand, or fix its cause")
    elif [c for c in drifted if c != ROUTE_CHECK] and not changes:
        notes.append("no operation of the deploys changes this: roll to a known-good unit (deploys/restore.py), "
                     "test this one in staging and add it to the policy, or edit the Deployment")
    if ROUTE_CHECK in drifted and waiting:
        notes.append(f"deploys/restore.py shifts the route back once the primary is stable; not yet: {waiting[0]}")
    return {"operations": ops, "changes": changes, "refused": refused, "note": "; ".join(notes) or None}


def host_entry(host: Mapping[str, Any]) -> dict[str, Any]:
    """The report's per-host record; error hosts carry only the error since no check ran."""
    status = host_status(host)
    if status == ERROR:
        return {"host": host["host"], "status": ERROR, "error": host["error"]}
    drifted = [c["check"] for c in host.get("checks") or [] if c["status"] == "drift"]
    unknown = [c["check"] for c in host.get("checks") or [] if c["status"] == "unknown"]
    return {"host": host["host"], "status": status, "error": None, "policy": host.get("policy"), "drifted": drifted,
            "unknown": unknown, "acceptsUnknown": bool(host.get("accept_unknown")), "checks": host.get("checks") or [],
            "fix": _fix(host, drifted),
            "prediction": host.get("prediction"), "gitops": host.get("gitops"), "observed": host.get("observed")}


def overall(statuses: list[str]) -> str:
    """Worst status wins, and an empty run is an error so a misconfigured inventory cannot pass."""
    if not statuses:
        return ERROR
    return next((s for s in _WORST if s in statuses), IN_SYNC)


def drift_report(result: Mapping[str, Any], now: float, detailed: bool = False) -> dict[str, Any]:
    """The ``DriftReport`` document for the runner's ``result`` (``now``: wall-clock epoch seconds)."""
    hosts = [host_entry(h) for h in result.get("hosts") or []]
    statuses = [h["status"] for h in hosts]
    state = overall(statuses)
    return envelope("DriftReport", {
        "metadata": {"inventory": result.get("inventory"), "limit": list(result.get("limit") or []),
                     "generatedAt": _rfc3339(now), "seconds": result.get("seconds")},
        "status": {"result": _RESULT[state], "exitCode": EXIT[detailed][state],
                   "exitCodes": "detailed (0 none, 2 drift or unknown, 3 drift whose fix is refused, 1 error)"
                   if detailed else "0 none, 1 drift or unknown, 3 drift whose fix is refused, 2 error",
                   "hosts": len(hosts), "inSync": statuses.count(IN_SYNC), "drifted": statuses.count(DRIFTED),
                   "fixRefused": statuses.count(FIX_REFUSED), "errors": statuses.count(ERROR),
                   "unknown": statuses.count(UNKNOWN)},
        "hosts": hosts,
    })


def render_drift(report: Mapping[str, Any]) -> str:
    """The human view: per host what drifted, the fix the deploys would make (diff + prediction), errors."""
    out: list[str] = []
    for h in report["hosts"]:
        if h["status"] == ERROR:
            out += [f"{h['host']}: ERROR: {h['error']}", ""]
            continue
        accepted = f" (unknown accepted by policy: {', '.join(h['unknown'])})" if h["unknown"] else ""
        head = {IN_SYNC: f"in sync{accepted}", DRIFTED: f"DRIFTED ({', '.join(h['drifted'])})",
                FIX_REFUSED: f"DRIFTED ({', '.join(h['drifted'])}), fix refused" if h["drifted"] else
                f"UNKNOWN ({', '.join(h['unknown'])}), fix refused" if h["unknown"] and not h["acceptsUnknown"] else
                "FIX REFUSED: no check drifted, but a deploy run stops at a refusal",
                UNKNOWN: f"UNKNOWN ({', '.join(h['unknown'])}): not in sync"}[h["status"]]
        out.append(f"{h['host']}: {head}")
        for c in h["checks"]:
            mark = {"pass": "ok", "drift": "DRIFT", "unknown": "??"}[c["status"]]
            out.append(f"  {mark:5} {c['check']}: {c['detail']}")
        if h.get("prediction"):
            out.append(f"  {h['prediction']['line']}")
        if h.get("gitops"):
            g = h["gitops"]
            maybe = "" if g["certain"] else "probably "
            out.append(f"  gitops: {maybe}managed by {g['tool']} {g['kind']} {g['name']} ({g['evidence']}); "
                       f"policy gitops: {g['mode']} — {g.get('reverted_by', 'self-heal')} reverts direct changes")
        fix = h["fix"]
        if fix["operations"]:
            out.append("  fix (the deploys' operations, planned, nothing written):")
            for op in fix["operations"]:
                state = ("refused" if op.get("refused") else "not run: the host stops at the refusal"
                         if op.get("notRun") else "would change" if op.get("changes") else "no change")
                out.append(f"    {op['operation']}: {state}")
                out += [f"      {line}" for line in op.get("lines") or []]
            if fix.get("refused"):
                out.append(f"  fix refused: {fix['refused']['operation']}: {fix['refused']['reason']} — a deploy run "
                           f"stops there ({fix['changes']} change(s) before it)")
        if fix.get("note"):
            out.append(f"  note: {fix['note']}")
        out.append("")
    s = report["status"]
    unknown = f"{s['unknown']} unknown, " if s["unknown"] else ""
    refused = f"{s['fixRefused']} drifted with the fix refused, " if s["fixRefused"] else ""
    out.append(f"{s['hosts']} host(s): {s['inSync']} in sync, {s['drifted']} drifted, {refused}{unknown}{s['errors']} "
               f"error(s) -> {s['result']} (exit {s['exitCode']})")
    return "\n".join(out) + "\n"


def drift_metrics(report: Mapping[str, Any], now: float) -> Metrics:
    """Per-check drift and unknown gauges and toggle expiries; the last-check time only when every host was
    checked."""
    metrics = Metrics()
    for h in report["hosts"]:
        if h["status"] == ERROR:
            continue
        for c in h["checks"]:  # unknown is drift, as in the exit code, unless the host's policy accepts it
            unknown = c["status"] == "unknown"
            metrics.drift(h["host"], c["check"], c["status"] == "drift" or (unknown and not h.get("acceptsUnknown")))
            metrics.unknown(h["host"], c["check"], unknown)
        for toggle in (h.get("observed") or {}).get("toggles") or []:
            metrics.override_expiry(h["host"], toggle["name"], _expiry(toggle["expires"]))
    if report["status"]["errors"] == 0 and report["hosts"]:
        metrics.checked(now)
    return metrics


def expire_report(result: Mapping[str, Any], now: float) -> dict[str, Any]:
    """The ``ExpireReport``: per host what was reverted, what stays (with expiry) or why it failed."""
    hosts = []
    for h in result.get("hosts") or []:
        status = ERROR if h.get("error") else "Reverted" if h.get("reverted") else "Unchanged"
        hosts.append({"host": h["host"], "status": status, "error": h.get("error"),
                      "badInput": bool(h.get("bad_input")),
                      "reverted": h.get("reverted") or [], "lines": h.get("lines") or [],
                      "remaining": [{"name": t["name"], "expires": t["expires"]} for t in h.get("remaining") or []]})
    errors = sum(h["status"] == ERROR for h in hosts)
    failed = bool(errors) or not hosts
    return envelope("ExpireReport", {
        "metadata": {"inventory": result.get("inventory"), "generatedAt": _rfc3339(now),
                     "seconds": result.get("seconds")},
        "status": {"result": "Error" if failed else "Done",
                   "exitCode": 2 if any(h["badInput"] for h in hosts) else 1 if failed else 0,
                   "hosts": len(hosts), "reverted": sum(h["status"] == "Reverted" for h in hosts), "errors": errors},
        "hosts": hosts})


def render_expire(report: Mapping[str, Any]) -> str:
    """Human lines for `expire`, one per host, saying what was reverted or why not."""
    out = []
    for h in report["hosts"]:
        if h["status"] == ERROR:
            out.append(f"{h['host']}: ERROR: {h['error']}")
        elif h["reverted"]:
            out.append(f"{h['host']}: reverted {', '.join(h['reverted'])}")
        else:
            out.append(f"{h['host']}: no toggle past its expiry")
        out += [f"  {line}" for line in h["lines"]]
        out += [f"  toggle {t['name']} stays until {t['expires']}" for t in h["remaining"]]
    s = report["status"]
    out.append(f"{s['hosts']} host(s): {s['reverted']} reverted, {s['errors']} error(s) (exit {s['exitCode']})")
    return "\n".join(out) + "\n"


def expire_metrics(report: Mapping[str, Any]) -> Metrics:
    """Counts for the expire run's metrics, so monitoring sees reverts and failures without parsing text."""
    metrics = Metrics()
    for h in report["hosts"]:
        if h["status"] == "Reverted":
            metrics.remediation("expire", "applied", len(h["reverted"]))
        elif h["status"] == ERROR:
            metrics.remediation("expire", "failed")
        for t in h["remaining"]:
            metrics.override_expiry(h["host"], t["name"], _expiry(t["expires"]))
    return metrics


def _expiry(value: str) -> float:
    """An override's expiry in seconds. Imported here: ``kube.annotations`` brings the policy model and pydantic
    (~0.15 s of CPU), which the drift and expire commands' parent process, which only renders what its child
    found, otherwise loaded on every run, even for a missing inventory."""
    from vllm_remedy.kube.annotations import parse_rfc3339

    return parse_rfc3339(value)
