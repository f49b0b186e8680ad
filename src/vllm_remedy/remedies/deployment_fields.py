"""The Deployment-level fields confirm records with a known-good mark, and restore reads back and checks before it
writes them with the revision's template (pure).

A rollback of the template alone keeps a bad rollout's ``strategy``, ``minReadySeconds`` and
``progressDeadlineSeconds``; confirm stores them on the ReplicaSet it marks (``<prefix>deployment-fields``), and
restore puts them back (or only shows them, policy ``restore.deployment_fields``). The record is an annotation:
data anyone with patch rights can edit, so it is validated before it is written.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from vllm_remedy.kube.annotations import Keys

#: Fields a bad rollout may change next to the template, which a rollback of the template alone keeps.
DEPLOYMENT_FIELDS = ("strategy", "minReadySeconds", "progressDeadlineSeconds")


def deployment_fields(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The Deployment-level fields of ``spec`` that confirm records with a known-good mark."""
    return {k: spec[k] for k in DEPLOYMENT_FIELDS if k in spec}


def recorded_fields(keys: Keys, notes: Mapping[str, str]) -> dict[str, Any]:
    """The fields recorded on a ReplicaSet ({} when none, or unreadable: a template rollback still proceeds)."""
    try:
        data = json.loads(notes.get(keys.deployment_fields) or "{}")
    except ValueError:
        return {}
    return {k: data[k] for k in DEPLOYMENT_FIELDS if isinstance(data, dict) and k in data}


#: Sanity bounds for recorded fields beyond the API server's own validation: a day of minReadySeconds or a
#: one-second progress deadline is a forged record, not something a confirmed revision ran with.
MAX_MIN_READY_SECONDS = 3600
MIN_PROGRESS_DEADLINE_SECONDS = 60


def _int_or_percent(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return value >= 0
    return isinstance(value, str) and value.endswith("%") and value[:-1].isdigit() and int(value[:-1]) <= 100


def field_problems(fields: Mapping[str, Any]) -> list[str]:
    """Why recorded Deployment fields must not be written back ([] when they may): the API server's validation of
    ``strategy``, ``minReadySeconds`` and ``progressDeadlineSeconds`` plus sanity bounds. The record is an
    annotation anyone with patch rights can edit: data, not authority."""
    out: list[str] = []
    strategy = fields.get("strategy")
    if strategy is not None:
        kind = strategy.get("type") if isinstance(strategy, dict) else None
        rolling = strategy.get("rollingUpdate") if isinstance(strategy, dict) else None
        if kind not in ("RollingUpdate", "Recreate"):
            out.append(f"strategy.type {kind!r} is neither RollingUpdate nor Recreate")
        elif kind == "Recreate" and rolling is not None:
            out.append("strategy Recreate with rollingUpdate set (the API server rejects it)")
        elif rolling is not None:
            surge, unavailable = (
                (rolling.get("maxSurge"), rolling.get("maxUnavailable")) if isinstance(rolling, dict) else ("?", "?")
            )
            if not all(v is None or _int_or_percent(v) for v in (surge, unavailable)):
                out.append(
                    f"rollingUpdate maxSurge {surge!r} / maxUnavailable {unavailable!r} is not a count or percentage"
                )
            elif surge in (0, "0%") and unavailable in (0, "0%"):
                out.append("rollingUpdate maxSurge and maxUnavailable both 0 (the API server rejects it)")
    ready, deadline = fields.get("minReadySeconds"), fields.get("progressDeadlineSeconds")
    for name, value in (("minReadySeconds", ready), ("progressDeadlineSeconds", deadline)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            out.append(f"{name} {value!r} is not a non-negative integer")
    if isinstance(ready, int) and not isinstance(ready, bool) and ready > MAX_MIN_READY_SECONDS:
        out.append(f"minReadySeconds {ready} is above {MAX_MIN_READY_SECONDS}")
    if isinstance(deadline, int) and not isinstance(deadline, bool):
        if deadline < MIN_PROGRESS_DEADLINE_SECONDS:
            out.append(f"progressDeadlineSeconds {deadline} is below {MIN_PROGRESS_DEADLINE_SECONDS}")
        if isinstance(ready, int) and deadline <= ready:
            out.append(f"progressDeadlineSeconds {deadline} is not above minReadySeconds {ready}")
    return out
