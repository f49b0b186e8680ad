"""The ``fallback-route`` drift check: the policy's gateway fallback route exists and sends the fallback no traffic.

A module of its own, as ``release_default`` is, because ``run_checks`` never calls it: only the runner reads the
HTTPRoute (with the host's client), so the check takes the route as read. Load shedding's shift is temporary; a route
left shifted is drift.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vllm_remedy.drift.checks import DRIFT, PASS, UNKNOWN, Check
from vllm_remedy.policy import Policy, format_duration
from vllm_remedy.remedies.fallback import fallback_traffic, route_name, shift_back_after


def check_fallback_route(policy: Policy, route: Mapping[str, Any] | None, unreadable: str | None = None,
                         missing: bool = False) -> Check:
    """The gateway fallback is temporary (``restore.shed_load`` shifts, ``restore.shift_back`` returns): a route left
    sending the fallback traffic is drift. ``route`` is the policy's HTTPRoute as read (None: ``missing`` - the
    API said 404 - or ``unreadable`` saying why), separate from :func:`run_checks` because only the runner reads it.
    """
    fallback = policy.fallback
    if fallback is None:
        return Check("fallback-route", PASS, "policy names no fallback route")
    if route is None:
        if missing:
            return Check("fallback-route", DRIFT, f"{route_name(fallback)}, the policy's fallback route, does not "
                         "exist: the gateway has no fallback to shift traffic to")
        return Check("fallback-route", UNKNOWN, f"cannot read {route_name(fallback)}: {unreadable}")
    share, said = fallback_traffic(route, fallback)
    if share is None:
        return Check("fallback-route", DRIFT, f"{said}: policy fallback.route / fallback.primary name another route")
    if share:
        after = format_duration(int(shift_back_after(policy)))
        return Check("fallback-route", DRIFT, f"{said}, left shifted: the fallback is temporary — deploys/restore.py "
                     f"shifts it back once the primary has been Ready for {after}")
    return Check("fallback-route", PASS, said)
