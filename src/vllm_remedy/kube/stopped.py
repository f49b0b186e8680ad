"""Which vLLM containers were stopped for a whole GPU scrape: only then is memory on their GPU someone else's.

Why a rule of its own: the API shows a container's restart only after the kubelet's next status sync, while the
DCGM exporter reads the device at once; a container whose crash-loop back-off has run out may already hold its
GPU again, so it is never called stopped (a diagnose once blamed "a process outside the pod" for vLLM's own
restart). Pure: pods in, verdicts out.
"""

from __future__ import annotations

from typing import Any

from vllm_remedy.kube.annotations import stamp_seconds
from vllm_remedy.policy.durations import parse_duration

#: Seconds before a back-off's end at which a restart is already possible: RFC 3339 stamps and the API's Date
#: are whole seconds.
BACKOFF_SLACK = 2.0


def _backoff_over(status: dict[str, Any], now: float) -> bool:
    """Whether the kubelet may already have restarted this waiting container: its back-off (the waiting message,
    "back-off 40s restarting failed container=…") has run out since its last exit. The API shows a start only
    after the kubelet's next status sync, while the exporter reads the device at once; an unreadable back-off
    counts as over (the memory is then not called foreign)."""
    waiting = (status.get("state") or {}).get("waiting") or {}
    if waiting.get("reason") != "CrashLoopBackOff":
        return False
    finished = stamp_seconds((((status.get("lastState") or {}).get("terminated")) or {}).get("finishedAt"))
    words = str(waiting.get("message") or "").split()
    try:
        backoff = parse_duration(words[1]) if words[:1] == ["back-off"] and len(words) > 1 else None
    except ValueError:
        backoff = None
    return finished is None or backoff is None or now >= finished + backoff - BACKOFF_SLACK


def _stopped(pod: dict[str, Any], container: str | None, now: float) -> tuple[int, ...] | None:
    """The restart counts of the pod's (vLLM) containers when none of them runs nor may have restarted by
    ``now`` (cluster time), else None."""
    statuses = [s for s in (pod.get("status") or {}).get("containerStatuses") or []
                if container is None or s.get("name") == container]
    if not statuses or any("running" in (s.get("state") or {}) or _backoff_over(s, now) for s in statuses):
        return None
    return tuple(int(s.get("restartCount") or 0) for s in statuses)


def stopped_throughout(before: list[dict[str, Any]], after: list[dict[str, Any]],
                        container: str | None, now: float) -> dict[str, dict[str, bool]]:
    """Pod name → whether its vLLM container was not running for the whole scrape: stopped in the reads before
    and after it with the same restart count, so no instance ran in between. Only then is memory on its GPU
    known not to be its own (the exporter reports whole devices)."""
    later = {p["metadata"]["name"]: p for p in after}
    out = {}
    for pod in before:
        name = pod["metadata"]["name"]
        first, second = _stopped(pod, container, now), _stopped(later.get(name) or {}, container, now)
        out[name] = {"stopped": first is not None and first == second}
    return out
