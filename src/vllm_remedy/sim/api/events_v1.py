"""``events.k8s.io/v1`` Events: the same stored Events as ``core/v1``, in the newer API's field names.

kube-apiserver serves one Event storage under both groups, converting on read: ``message`` is ``note``,
``involvedObject`` is ``regarding``, ``source``/``firstTimestamp``/``lastTimestamp``/``count`` move to the
``deprecated*`` fields, and ``reportingComponent`` is ``reportingController``. Read-only here: the
cluster's own recorders write core/v1 Events. Pure: object in, object out.
"""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]
RENAMED = (("message", "note"), ("involvedObject", "regarding"), ("related", "related"), ("source", "deprecatedSource"),
           ("firstTimestamp", "deprecatedFirstTimestamp"), ("lastTimestamp", "deprecatedLastTimestamp"),
           ("count", "deprecatedCount"), ("reportingComponent", "reportingController"),
           ("reportingInstance", "reportingInstance"), ("action", "action"), ("reason", "reason"), ("type", "type"),
           ("series", "series"), ("eventTime", "eventTime"))


def from_core(event: Obj) -> Obj:
    """A core/v1 Event as events.k8s.io/v1 shows it."""
    out: Obj = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": event.get("metadata", {})}
    for old, new in RENAMED:
        if event.get(old) not in (None, "", {}):
            out[new] = event[old]
    if "eventTime" not in out:  # required in v1: an old-style Event's first occurrence, at microsecond precision
        first = str(event.get("firstTimestamp") or event["metadata"].get("creationTimestamp") or "")
        out["eventTime"] = first.replace("Z", ".000000Z") if first.endswith("Z") and "." not in first else first
    if "reportingController" not in out and (event.get("source") or {}).get("component"):
        out["reportingController"] = event["source"]["component"]
    return out
