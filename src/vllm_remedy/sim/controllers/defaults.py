"""The apiserver's defaulting for the objects the controllers write or compare.

kubectl's ``rollout undo`` compares the ReplicaSet's template with the Deployment's *as stored*, i.e.
after defaulting; our template hash does the same. The HTTP layer should call ``default_deployment``
on create, update and patch so ``get -o yaml`` shows what a real cluster shows.
"""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]

_PROBE_DEFAULTS = {"timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3}


def _image_pull_policy(image: str) -> str:
    tail = image.rsplit("/", 1)[-1]
    if "@" in tail:
        return "IfNotPresent"
    tag = tail.split(":", 1)[1] if ":" in tail else ""
    return "Always" if tag in ("", "latest") else "IfNotPresent"


def _default_container(container: Obj) -> None:
    container.setdefault("terminationMessagePath", "/dev/termination-log")
    container.setdefault("terminationMessagePolicy", "File")
    container.setdefault("imagePullPolicy", _image_pull_policy(str(container.get("image", ""))))
    container.setdefault("resources", {})
    for port in container.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
    for probe_name in ("livenessProbe", "readinessProbe", "startupProbe"):
        probe = container.get(probe_name)
        if isinstance(probe, dict):
            for key, value in _PROBE_DEFAULTS.items():
                probe.setdefault(key, value)
            if isinstance(probe.get("httpGet"), dict):
                probe["httpGet"].setdefault("scheme", "HTTP")


def default_pod_spec(spec: Obj) -> Obj:
    """The PodSpec fields the apiserver fills in (restartPolicy, dnsPolicy, probe timings, volume modes),
    so ``get -o yaml`` and template comparisons see what a real cluster stores."""
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    for key in ("containers", "initContainers"):
        for container in spec.get(key) or []:
            if isinstance(container, dict):
                _default_container(container)
    for volume in spec.get("volumes") or []:
        if not isinstance(volume, dict):
            continue
        for kind in ("configMap", "secret", "projected"):
            if isinstance(volume.get(kind), dict):
                volume[kind].setdefault("defaultMode", 420)
    return spec


def default_pod_template(template: Obj) -> Obj:
    """Template defaulting in place: a hand-written template and one read back from the store must
    compare equal, or ``rollout undo`` would not find the old ReplicaSet."""
    template.setdefault("metadata", {})
    if not isinstance(template.get("spec"), dict):
        template["spec"] = {}
    default_pod_spec(template["spec"])
    return template


def default_pod(pod: Obj) -> Obj:
    """Pod-only defaulting: requests default to limits (what makes a GPU limit a GPU request)."""
    spec = pod.setdefault("spec", {})
    default_pod_spec(spec)
    for key in ("containers", "initContainers"):
        for container in spec.get(key) or []:
            resources = container.get("resources") or {}
            limits = resources.get("limits") or {}
            if limits:
                requests = resources.setdefault("requests", {})
                for name, value in limits.items():
                    requests.setdefault(name, value)
                container["resources"] = resources
    spec.setdefault("enableServiceLinks", True)
    spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    spec.setdefault("priority", 0)
    return pod


def default_deployment(obj: Obj) -> Obj:
    """apps/v1 Deployment defaults: replicas, strategy, history limit, progress deadline, template."""
    spec = obj.setdefault("spec", {})
    spec.setdefault("replicas", 1)
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)
    strategy = spec.setdefault("strategy", {})
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        rolling = strategy.setdefault("rollingUpdate", {})
        rolling.setdefault("maxSurge", "25%")
        rolling.setdefault("maxUnavailable", "25%")
    default_pod_template(spec.setdefault("template", {}))
    return obj


def default_replicaset(obj: Obj) -> Obj:
    """apps/v1 ReplicaSet defaults (replicas 1, a defaulted template) for ReplicaSets written through the API."""
    spec = obj.setdefault("spec", {})
    spec.setdefault("replicas", 1)
    default_pod_template(spec.setdefault("template", {}))
    return obj
