"""Warning Events on an ``@k8s`` host's pods: evidence of crashes whose pods are gone.

A revision's pods can die and vanish before any tool sees them — ``strategy: Recreate`` deletes them when
the next revision starts, and so does a colleague's edit. Their Events ("Back-off restarting failed
container" ×N) outlive them by the hour the API server keeps Events, which is how restore still knows not
to roll back onto that revision (``remedies.evidence.crashes_in_events``).

    pyinfra inventories/local.py fact vllm_remedy.facts.events.PodEvents
"""

from __future__ import annotations

from typing import Any

from vllm_remedy.facts.base import JsonFact


class PodEvents(JsonFact[dict[str, Any]]):
    """``events``: one dict per Warning Event on the Deployment's pods (pod, reason, message, count, first, last),
    or None with ``error`` when Events could not be read."""

    def command(self) -> str:
        return "k8s-events"

    def build(self, document: dict[str, Any]) -> dict[str, Any]:
        events = document.get("events")
        if events is None:
            return {"events": None, "error": str(document.get("error") or "Events not readable")}
        return {"events": [dict(e) for e in events if isinstance(e, dict)]}
