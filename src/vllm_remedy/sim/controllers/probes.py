"""When kubelet's startup or liveness probe would kill a container that is not healthy in time.

The classic vLLM crash loop without any OOM: a 4-minute model load behind a liveness probe that
gives up after 30 s. The container never becomes healthy before the probe's failure budget
(initialDelaySeconds + periodSeconds × failureThreshold) runs out, kubelet kills it (exit 137) and
restarts it with back-off. Liveness only starts once a startup probe, if any, has passed.
"""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]

KILLED_EXIT_CODE = 137  # SIGKILL after the grace period, as kubectl shows for probe kills


def failure_budget(probe: Obj) -> float:
    """Seconds a never-passing probe lasts before kubelet acts: initialDelay + period × failureThreshold
    (timeoutSeconds ignored: a refused connection fails at once)."""
    return float(probe.get("initialDelaySeconds", 0)) + float(probe.get("periodSeconds", 10)) * float(
        probe.get("failureThreshold", 3))


def probe_kill(container: Obj, healthy_after: float | None) -> tuple[float, str] | None:
    """(seconds after start, "Startup"/"Liveness") when a probe kills the container, or None."""
    startup, liveness = container.get("startupProbe"), container.get("livenessProbe")
    if isinstance(startup, dict):
        budget = failure_budget(startup)
        if healthy_after is None or healthy_after > budget:
            return budget, "Startup"
        return None
    if isinstance(liveness, dict):
        budget = failure_budget(liveness)
        if healthy_after is None or healthy_after > budget:
            return budget, "Liveness"
    return None


def probe_failure_message(kind: str, probe: Obj, pod_ip: str) -> str:
    """The Unhealthy event text for an HTTP probe hitting a port nobody listens on yet."""
    http = probe.get("httpGet")
    if isinstance(http, dict):
        port, path = http.get("port", 80), http.get("path", "/")
        scheme = str(http.get("scheme", "HTTP")).lower()
        return (f'{kind} probe failed: Get "{scheme}://{pod_ip}:{port}{path}": '
                f"dial tcp {pod_ip}:{port}: connect: connection refused")
    tcp = probe.get("tcpSocket")
    if isinstance(tcp, dict):
        return f"{kind} probe failed: dial tcp {pod_ip}:{tcp.get('port')}: connect: connection refused"
    return f"{kind} probe failed: "
