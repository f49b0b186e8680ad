"""Pod and node health read from API dicts: crash loops, how a container died, and since when it is Ready.

Why the distinction matters: a CUDA OOM in vLLM is a Python exception — ``reason: Error``, exit 1 — while
``OOMKilled`` (exit 137) is the *host* kernel killing the container for exceeding its memory limit.
The remedies differ (GPU budget vs. memory limit), and alerts on OOMKilled never fire for CUDA OOM.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

CRASH_LOOP = "CrashLoopBackOff"
HOST_OOM = "OOMKilled"
SIGKILL_EXIT = 137


def _ts(value: str | None) -> float | None:
    if not value:
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


@dataclass(frozen=True)
class ContainerHealth:
    """One container's status; ``exit_code``/``terminated_reason`` describe its most recent death."""

    name: str
    ready: bool
    restarts: int
    state: str  # "running" | "waiting" | "terminated" | "unknown"
    waiting_reason: str | None
    waiting_message: str | None
    exit_code: int | None
    terminated_reason: str | None
    terminated_now: bool  # the death is the current state (not yet restarted) rather than lastState

    @property
    def crash_looping(self) -> bool:
        """Died with a failure and not Ready since: what an SRE calls crash-looping.

        Not ``waiting.reason == CrashLoopBackOff`` alone: that is only the back-off window (10 s, 20 s,
        40 s …), while between a restart and the next crash the container reads ``running`` (vLLM loading
        the model again for a minute or more). A verdict from the narrow test flickered with the moment of
        the read.
        """
        if self.ready:
            return False
        return self.waiting_reason == CRASH_LOOP or (self.failed and (self.restarts > 0 or self.terminated_now))

    @property
    def host_oom_killed(self) -> bool:
        """The kernel OOM killer (host memory), not a CUDA OOM."""
        return self.terminated_reason == HOST_OOM

    @property
    def failed(self) -> bool:
        """Died with a non-zero exit code (CUDA OOM shows up here as Error/1)."""
        return self.exit_code not in (None, 0)


def container_health(status: Mapping[str, Any]) -> ContainerHealth:
    """Flatten a containerStatus; the death is read from lastState once the container has restarted."""
    state = status.get("state") or {}
    last = status.get("lastState") or {}
    waiting = state.get("waiting") or {}
    term_now = state.get("terminated")
    term = term_now or last.get("terminated") or {}
    kind = next((k for k in ("running", "waiting", "terminated") if k in state), "unknown")
    return ContainerHealth(
        name=str(status.get("name", "")), ready=bool(status.get("ready")),
        restarts=int(status.get("restartCount") or 0), state=kind,
        waiting_reason=waiting.get("reason"), waiting_message=waiting.get("message"),
        exit_code=term.get("exitCode"), terminated_reason=term.get("reason"), terminated_now=bool(term_now))


@dataclass(frozen=True)
class PodHealth:
    """A pod's readiness and its containers' deaths: what remediation waits for and judges."""

    name: str
    namespace: str
    node: str | None
    phase: str
    ready: bool
    ready_since: str | None  # Ready condition's lastTransitionTime while Ready is True
    unschedulable: str | None  # the scheduler's message while PodScheduled=False/Unschedulable
    template_hash: str | None
    containers: tuple[ContainerHealth, ...]

    @property
    def restarts(self) -> int:
        """Total restarts across containers; a rising count is how a crash loop shows."""
        return sum(c.restarts for c in self.containers)

    @property
    def crash_looping(self) -> bool:
        """Any container in CrashLoopBackOff makes the pod unusable, whatever the others do."""
        return any(c.crash_looping for c in self.containers)

    @property
    def host_oom_killed(self) -> bool:
        """Host-memory OOM needs a different remedy than CUDA OOM, so it is told apart."""
        return any(c.host_oom_killed for c in self.containers)

    def ready_for(self, now: float) -> float:
        """Seconds the pod has been Ready (0 when not Ready)."""
        since = _ts(self.ready_since) if self.ready else None
        return max(0.0, now - since) if since is not None else 0.0

    def container(self, name: str) -> ContainerHealth | None:
        """The named container, or None: the vLLM container is chosen by name, not position."""
        return next((c for c in self.containers if c.name == name), None)


#: Failed restarts after which a container Ready for less than the stable time is between two crashes.
FLAP_RESTARTS = 2


def flapping(ready: bool, ready_since: str | None, now: float | None, stable: float) -> bool:
    """Ready again, but for less than ``stable`` seconds at cluster time ``now``: between two OOMs under load a
    pod passes its readiness probe and looks healthy. Unknown times (no ``now``, an unreadable stamp): False."""
    if now is None or not ready or not ready_since:
        return False
    try:
        since = _ts(ready_since)
    except ValueError:
        return False
    return since is not None and now - since < stable


def flapping_container(health: PodHealth, now: float | None, stable: float) -> ContainerHealth | None:
    """The first container that died ``FLAP_RESTARTS`` times or more in a pod Ready for less than ``stable``
    seconds (:func:`flapping`): crash-looping, though Ready this minute. Restore and drift share this rule."""
    if not flapping(health.ready, health.ready_since, now, stable):
        return None
    return next((c for c in health.containers if c.failed and c.restarts >= FLAP_RESTARTS), None)


def _condition(obj: Mapping[str, Any], kind: str) -> dict[str, Any]:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind:
            return dict(cond)
    return {}


def pod_health(pod: Mapping[str, Any]) -> PodHealth:
    """Read a pod object into PodHealth; Unschedulable is kept since a pending GPU pod never crashes."""
    meta, status = pod.get("metadata") or {}, pod.get("status") or {}
    ready = _condition(pod, "Ready")
    scheduled = _condition(pod, "PodScheduled")
    is_ready = ready.get("status") == "True"
    unschedulable = None
    if scheduled.get("status") == "False" and scheduled.get("reason") == "Unschedulable":
        unschedulable = str(scheduled.get("message") or "Unschedulable")
    return PodHealth(
        name=str(meta.get("name", "")), namespace=str(meta.get("namespace", "")),
        node=(pod.get("spec") or {}).get("nodeName"), phase=str(status.get("phase") or "Unknown"),
        ready=is_ready, ready_since=ready.get("lastTransitionTime") if is_ready else None,
        unschedulable=unschedulable, template_hash=(meta.get("labels") or {}).get("pod-template-hash"),
        containers=tuple(container_health(s) for s in status.get("containerStatuses") or []))


@dataclass(frozen=True)
class NodeHealth:
    """Whether a node can take a GPU pod: Ready, not cordoned, no resource pressure."""

    name: str
    ready: bool
    cordoned: bool
    pressure: tuple[str, ...]  # MemoryPressure/DiskPressure/PIDPressure that are True


def node_health(node: Mapping[str, Any]) -> NodeHealth:
    """Read a node object into NodeHealth from its conditions and spec.unschedulable."""
    conditions = (node.get("status") or {}).get("conditions") or []
    pressure = tuple(c["type"] for c in conditions
                     if c.get("type", "").endswith("Pressure") and c.get("status") == "True")
    return NodeHealth(name=str((node.get("metadata") or {}).get("name", "")),
                      ready=_condition(node, "Ready").get("status") == "True",
                      cordoned=bool((node.get("spec") or {}).get("unschedulable")), pressure=pressure)
