"""kube-state-metrics for the rehearsal cluster: the series `vllm-remedy alerts` queries, from its own objects.

On a real cluster kube-state-metrics (2.x) turns pod and Deployment status into series, and the rendered
PrometheusRule (alerts/rules.py) reads those: restarts, the last termination's exit code and reason, the current
waiting reason, which image a container runs (``kube_pod_container_info``), pod labels, and the Deployment's
replica counts. Serving the same metric and label names from the rehearsal cluster lets a real Prometheus
evaluate the real rules against a real crash loop (game day "alert to restored"). Pure: the store is read, never
written. Like kube-state-metrics 2.x:

- ``kube_pod_container_status_waiting_reason`` and ``..._last_terminated_reason`` have one series per container,
  for its current reason only (value 1); a container not waiting / never terminated has none;
- ``kube_pod_labels`` carries ``label_<sanitized key>`` for every pod label (as with
  ``--metric-labels-allowlist=pods=[*]``, which the runbook's match-label scoping needs);
- every pod series carries ``uid``; Deployment series carry ``namespace`` and ``deployment``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

Obj = dict[str, Any]
#: The content type kube-state-metrics answers with (Prometheus text format 0.0.4).
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_UNSAFE = re.compile(r"[^a-zA-Z0-9_]")

#: name → (type, help), in the order kube-state-metrics writes them.
FAMILIES: dict[str, tuple[str, str]] = {
    "kube_deployment_spec_replicas": ("gauge", "Number of desired pods for a deployment."),
    "kube_deployment_status_replicas": ("gauge", "The number of replicas per deployment."),
    "kube_deployment_status_replicas_available": ("gauge", "The number of available replicas per deployment."),
    "kube_deployment_status_replicas_unavailable": ("gauge", "The number of unavailable replicas per deployment."),
    "kube_deployment_status_replicas_updated": ("gauge", "The number of updated replicas per deployment."),
    "kube_deployment_metadata_generation": ("gauge", "Sequence number representing a specific generation of the "
                                                     "desired state."),
    "kube_deployment_status_observed_generation": ("gauge", "The generation observed by the deployment "
                                                            "controller."),
    "kube_pod_labels": ("gauge", "Kubernetes labels converted to Prometheus labels."),
    "kube_pod_owner": ("gauge", "Information about the Pod's owner."),
    "kube_pod_status_ready": ("gauge", "Describes whether the pod is ready to serve requests."),
    "kube_pod_container_info": ("gauge", "Information about a container in a pod."),
    "kube_pod_container_status_ready": ("gauge", "Describes whether the containers readiness check succeeded."),
    "kube_pod_container_status_restarts_total": ("counter", "The number of container restarts per container."),
    "kube_pod_container_status_waiting": ("gauge", "Describes whether the container is currently in waiting "
                                                   "state."),
    "kube_pod_container_status_waiting_reason": ("gauge", "Describes the reason the container is currently in "
                                                          "waiting state."),
    "kube_pod_container_status_last_terminated_reason": ("gauge", "Describes the last reason the container was in "
                                                                  "terminated state."),
    "kube_pod_container_status_last_terminated_exitcode": ("gauge", "Describes the exit code for the last "
                                                                    "container in terminated state."),
}


def label_name(key: str) -> str:
    """A Kubernetes label key as kube-state-metrics names it on ``kube_pod_labels``."""
    return "label_" + _UNSAFE.sub("_", key)


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _series(name: str, labels: dict[str, str], value: float) -> tuple[str, str]:
    inner = ",".join(f'{k}="{_escape(str(v))}"' for k, v in labels.items())
    number = repr(float(value)) if value != int(value) else str(int(value))
    return name, f"{name}{{{inner}}} {number}"


def _deployment(dep: Obj) -> Iterator[tuple[str, str]]:
    meta, spec, status = dep["metadata"], dep.get("spec") or {}, dep.get("status") or {}
    base = {"namespace": meta["namespace"], "deployment": meta["name"]}
    yield _series("kube_deployment_spec_replicas", base, int(spec.get("replicas", 1)))
    for field, metric in (("replicas", "status_replicas"), ("availableReplicas", "status_replicas_available"),
                          ("unavailableReplicas", "status_replicas_unavailable"),
                          ("updatedReplicas", "status_replicas_updated"),
                          ("observedGeneration", "status_observed_generation")):
        yield _series(f"kube_deployment_{metric}", base, int(status.get(field, 0)))
    yield _series("kube_deployment_metadata_generation", base, int(meta.get("generation", 0)))


def _pod(pod: Obj) -> Iterator[tuple[str, str]]:
    meta, status = pod["metadata"], pod.get("status") or {}
    base = {"namespace": meta["namespace"], "pod": meta["name"], "uid": meta.get("uid", "")}
    labels = {label_name(k): v for k, v in sorted((meta.get("labels") or {}).items())}
    yield _series("kube_pod_labels", {**base, **labels}, 1)
    for ref in meta.get("ownerReferences") or []:
        yield _series("kube_pod_owner", {**base, "owner_kind": ref.get("kind", ""), "owner_name": ref.get("name", ""),
                                         "owner_is_controller": str(bool(ref.get("controller"))).lower()}, 1)
    ready = next((c.get("status") for c in status.get("conditions") or [] if c.get("type") == "Ready"), None)
    if ready is not None:
        for condition in ("true", "false", "unknown"):
            yield _series("kube_pod_status_ready", {**base, "condition": condition},
                          1 if str(ready).lower() == condition else 0)
    statuses = {c.get("name"): c for c in status.get("containerStatuses") or []}
    for container in (pod.get("spec") or {}).get("containers") or []:
        cs = statuses.get(container.get("name"))
        if cs is None:
            continue
        yield from _container(base, container, cs)


def _container(base: dict[str, str], container: Obj, cs: Obj) -> Iterator[tuple[str, str]]:
    ident = {**base, "container": cs["name"]}
    yield _series("kube_pod_container_info", {**ident, "image_spec": container.get("image", ""),
                                              "image": cs.get("image") or container.get("image", ""),
                                              "image_id": cs.get("imageID", ""),
                                              "container_id": cs.get("containerID", "")}, 1)
    yield _series("kube_pod_container_status_ready", ident, 1 if cs.get("ready") else 0)
    yield _series("kube_pod_container_status_restarts_total", ident, int(cs.get("restartCount", 0)))
    waiting = (cs.get("state") or {}).get("waiting")
    yield _series("kube_pod_container_status_waiting", ident, 1 if waiting is not None else 0)
    if waiting and waiting.get("reason"):
        yield _series("kube_pod_container_status_waiting_reason", {**ident, "reason": waiting["reason"]}, 1)
    last = (cs.get("lastState") or {}).get("terminated")
    if last:
        if last.get("reason"):
            yield _series("kube_pod_container_status_last_terminated_reason", {**ident, "reason": last["reason"]}, 1)
        yield _series("kube_pod_container_status_last_terminated_exitcode", ident, int(last.get("exitCode", 0)))


def exposition(deployments: Iterable[Obj], pods: Iterable[Obj]) -> str:
    """The ``/metrics`` text for these objects: every family's HELP/TYPE, then its series."""
    rows: dict[str, list[str]] = {name: [] for name in FAMILIES}
    for dep in sorted(deployments, key=lambda d: (d["metadata"]["namespace"], d["metadata"]["name"])):
        for name, line in _deployment(dep):
            rows[name].append(line)
    for pod in sorted(pods, key=lambda p: (p["metadata"]["namespace"], p["metadata"]["name"])):
        for name, line in _pod(pod):
            rows[name].append(line)
    out: list[str] = []
    for name, (kind, text) in FAMILIES.items():
        out += [f"# HELP {name} {text}", f"# TYPE {name} {kind}", *rows[name]]
    return "\n".join(out) + "\n"
