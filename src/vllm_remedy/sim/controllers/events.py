"""core/v1 Events as kube components record them, including the client-side aggregation.

Real recorders merge repeats of the same (object, type, reason, message) into one Event whose
``count`` grows, which is what ``kubectl describe`` and ``get events`` show for a crash loop
("Back-off restarting failed container" ×N) or a pod stuck in FailedScheduling.
"""

from __future__ import annotations

import itertools
import threading
from typing import Any

from vllm_remedy.sim.clock import Clock
from vllm_remedy.sim.store import ApiError, Store

Obj = dict[str, Any]


class EventRecorder:
    """Writes core/v1 Events as client-go's recorder does, folding repeats into ``count`` so a long crash
    loop is one growing Event rather than thousands of objects."""

    def __init__(self, store: Store, clock: Clock) -> None:
        self.store = store
        self.clock = clock
        self._seen: dict[tuple[str, str, str, str], tuple[str, str]] = {}
        self._lock = threading.Lock()
        self._seq = itertools.count()

    def record(
        self, obj: Obj, type_: str, reason: str, message: str, component: str, *,
        host: str | None = None, field_path: str | None = None,
    ) -> None:
        """Create the Event, or bump ``count``/``lastTimestamp`` of an identical earlier one."""
        meta = obj.get("metadata", {})
        namespace = meta.get("namespace") or "default"
        key = (meta.get("uid", ""), type_, reason, message)
        now = self.clock.now()
        stamp = self.clock.timestamp(now)
        with self._lock:
            known = self._seen.get(key)
        if known is not None:
            try:
                def bump(ev: Obj) -> None:
                    ev["count"] = int(ev.get("count", 1)) + 1
                    ev["lastTimestamp"] = stamp

                self.store.mutate("events", known[0], known[1], bump)
                return
            except ApiError:
                pass  # deleted meanwhile: record afresh
        name = f"{meta.get('name', '')}.{int(now * 1e9) + next(self._seq):x}"
        involved: Obj = {
            "kind": obj.get("kind", ""), "namespace": meta.get("namespace", ""), "name": meta.get("name", ""),
            "uid": meta.get("uid", ""), "apiVersion": obj.get("apiVersion", ""),
            "resourceVersion": meta.get("resourceVersion", ""),
        }
        if field_path:
            involved["fieldPath"] = field_path
        source: Obj = {"component": component}
        if host:
            source["host"] = host
        event = {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": involved, "reason": reason, "message": message, "source": source,
            "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1, "type": type_,
            "eventTime": None, "reportingComponent": component, "reportingInstance": host or "",
        }
        try:
            self.store.create("events", event)
        except ApiError:
            return
        with self._lock:
            self._seen[key] = (namespace, name)
            if len(self._seen) > 50_000:  # bound memory on very long runs
                self._seen.clear()
