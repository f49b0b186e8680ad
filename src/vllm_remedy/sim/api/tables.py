"""Server-side printing: the ``meta.k8s.io/v1`` Table kubectl asks for on every plain ``get``.

kubectl prints exactly the cells it receives, so the columns and the cell text here are kubectl's
own (kubernetes ``pkg/printers/internalversion/printers.go``): without them ``kubectl get`` shows
only NAME and AGE, and the runbook's ``get pod -o wide`` would not show the Node.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from vllm_remedy.sim.api.selectors import format_label_selector
from vllm_remedy.sim.clock import parse_timestamp

Obj = dict[str, Any]
Column = tuple[str, str, int, str]  # name, type, priority (1 = -o wide only), description
TABLE_CONTENT_TYPE = "application/json;as=Table;v=v1;g=meta.k8s.io"


def human_duration(seconds: float) -> str:
    """kubectl's age format (apimachinery ``duration.HumanDuration``)."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m{s % 60}s" if s % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d{hours % 24}h" if hours % 24 else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y{days}d" if days else f"{hours // 24 // 365}y"
    return f"{hours // 24 // 365}y"


def since(stamp: str | None, now: float) -> str:
    """The AGE column: human duration since a timestamp, on the cluster clock."""
    return human_duration(now - parse_timestamp(stamp)) if stamp else "<unknown>"


def _containers(obj: Obj) -> list[Obj]:
    return obj.get("spec", {}).get("template", {}).get("spec", {}).get("containers") or []


def _wide_workload(obj: Obj) -> list[Any]:
    containers = _containers(obj)
    return [",".join(c.get("name", "") for c in containers), ",".join(c.get("image", "") for c in containers),
            format_label_selector(obj.get("spec", {}).get("selector"))]


def _deployment(obj: Obj, now: float) -> list[Any]:
    spec, status = obj.get("spec", {}), obj.get("status", {})
    return [obj["metadata"]["name"], f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 1)}",
            status.get("updatedReplicas", 0), status.get("availableReplicas", 0),
            since(obj["metadata"].get("creationTimestamp"), now), *_wide_workload(obj)]


def _replicaset(obj: Obj, now: float) -> list[Any]:
    spec, status = obj.get("spec", {}), obj.get("status", {})
    return [obj["metadata"]["name"], spec.get("replicas", 1), status.get("replicas", 0),
            status.get("readyReplicas", 0), since(obj["metadata"].get("creationTimestamp"), now),
            *_wide_workload(obj)]


def pod_status(pod: Obj) -> tuple[str, int, int, int, str | None]:
    """(STATUS text, ready, total, restarts, last restart time) the way kubectl's printPod derives them."""
    status, spec = pod.get("status", {}), pod.get("spec", {})
    reason = status.get("reason") or status.get("phase") or "Pending"
    statuses = status.get("containerStatuses") or []
    total = len(spec.get("containers") or [])
    ready = restarts = 0
    last_restart: str | None = None
    has_running = False
    for cs in reversed(statuses):
        restarts += int(cs.get("restartCount", 0))
        finished = ((cs.get("lastState") or {}).get("terminated") or {}).get("finishedAt")
        if finished and (last_restart is None or finished > last_restart):
            last_restart = finished
        state = cs.get("state") or {}
        waiting, terminated = state.get("waiting"), state.get("terminated")
        if waiting and waiting.get("reason"):
            reason = waiting["reason"]
        elif terminated and terminated.get("reason"):
            reason = terminated["reason"]
        elif terminated:
            signal = terminated.get("signal")
            reason = f"Signal:{signal}" if signal else f"ExitCode:{terminated.get('exitCode', 0)}"
        elif cs.get("ready") and "running" in state:
            has_running = True
            ready += 1
    if reason == "Completed" and has_running:
        conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
        reason = "Running" if conditions.get("Ready") == "True" else "NotReady"
    if pod.get("metadata", {}).get("deletionTimestamp"):
        reason = "Unknown" if status.get("reason") == "NodeLost" else "Terminating"
    return reason, ready, total, restarts, last_restart


def _pod(obj: Obj, now: float) -> list[Any]:
    reason, ready, total, restarts, last_restart = pod_status(obj)
    restarts_cell = f"{restarts} ({since(last_restart, now)} ago)" if last_restart else str(restarts)
    status, spec = obj.get("status", {}), obj.get("spec", {})
    gates = spec.get("readinessGates") or []
    if gates:
        true = {c.get("type") for c in status.get("conditions") or [] if c.get("status") == "True"}
        gates_cell = f"{sum(g.get('conditionType') in true for g in gates)}/{len(gates)}"
    else:
        gates_cell = "<none>"
    return [obj["metadata"]["name"], f"{ready}/{total}", reason, restarts_cell,
            since(obj["metadata"].get("creationTimestamp"), now), status.get("podIP") or "<none>",
            spec.get("nodeName") or "<none>", status.get("nominatedNodeName") or "<none>", gates_cell]


def _node(obj: Obj, now: float) -> list[Any]:
    status, spec = obj.get("status", {}), obj.get("spec", {})
    ready = next((c.get("status") for c in status.get("conditions") or [] if c.get("type") == "Ready"), None)
    states = ["Ready" if ready == "True" else "NotReady" if ready is not None else "Unknown"]
    if spec.get("unschedulable"):
        states.append("SchedulingDisabled")
    labels = obj["metadata"].get("labels") or {}
    prefix = "node-role.kubernetes.io/"
    roles = sorted(k.partition(prefix)[2] for k in labels if k.startswith(prefix))
    if labels.get("kubernetes.io/role"):
        roles.append(labels["kubernetes.io/role"])
    addresses = {a.get("type"): a.get("address") for a in status.get("addresses") or []}
    info = status.get("nodeInfo") or {}
    return [obj["metadata"]["name"], ",".join(states), ",".join(r for r in roles if r) or "<none>",
            since(obj["metadata"].get("creationTimestamp"), now), info.get("kubeletVersion", ""),
            addresses.get("InternalIP") or "<none>", addresses.get("ExternalIP") or "<none>",
            info.get("osImage") or "<unknown>", info.get("kernelVersion") or "<unknown>",
            info.get("containerRuntimeVersion") or "<unknown>"]


def _event(obj: Obj, now: float) -> list[Any]:
    involved, source = obj.get("involvedObject") or {}, obj.get("source") or {}
    first = obj.get("firstTimestamp") or obj.get("eventTime")
    last = (obj.get("series") or {}).get("lastObservedTime") or obj.get("lastTimestamp") or first
    src = source.get("component") or obj.get("reportingComponent") or ""
    host = source.get("host") or obj.get("reportingInstance") or ""
    source_cell = f"{src}, {host}" if host else src
    return [since(last, now), obj.get("type", ""), obj.get("reason", ""),
            f"{involved.get('kind', '').lower()}/{involved.get('name', '')}", involved.get("fieldPath", ""),
            source_cell, obj.get("message", ""), since(first, now), int(obj.get("count") or 1),
            obj["metadata"]["name"]]


def _configmap(obj: Obj, now: float) -> list[Any]:
    return [obj["metadata"]["name"], len(obj.get("data") or {}) + len(obj.get("binaryData") or {}),
            since(obj["metadata"].get("creationTimestamp"), now)]


def _secret(obj: Obj, now: float) -> list[Any]:
    return [obj["metadata"]["name"], obj.get("type", "Opaque"), len(obj.get("data") or {}),
            since(obj["metadata"].get("creationTimestamp"), now)]


def _namespace(obj: Obj, now: float) -> list[Any]:
    return [obj["metadata"]["name"], obj.get("status", {}).get("phase", "Active"),
            since(obj["metadata"].get("creationTimestamp"), now)]


def _httproute(obj: Obj, now: float) -> list[Any]:
    hosts = obj.get("spec", {}).get("hostnames")
    return [obj["metadata"]["name"], str(hosts) if hosts else "", since(obj["metadata"].get("creationTimestamp"), now)]


def _cronjob(obj: Obj, now: float) -> list[Any]:
    spec, status = obj.get("spec", {}), obj.get("status", {})
    job = (spec.get("jobTemplate") or {}).get("spec") or {}
    return [obj["metadata"]["name"], spec.get("schedule", ""), spec.get("timeZone") or "<none>",
            "True" if spec.get("suspend") else "False", len(status.get("active") or []),
            since(status.get("lastScheduleTime"), now) if status.get("lastScheduleTime") else "<none>",
            since(obj["metadata"].get("creationTimestamp"), now), *_wide_workload({"spec": job})]


def _binding(obj: Obj, now: float) -> list[Any]:
    ref = obj.get("roleRef") or {}
    subjects = obj.get("subjects") or []

    def of(kind: str) -> str:
        names = [(f"{s.get('namespace')}/" if kind == "ServiceAccount" else "") + s.get("name", "")
                 for s in subjects if s.get("kind") == kind]
        return ", ".join(names)

    return [obj["metadata"]["name"], f"{ref.get('kind', '')}/{ref.get('name', '')}",
            since(obj["metadata"].get("creationTimestamp"), now), of("User"), of("Group"), of("ServiceAccount")]


def _role(obj: Obj, now: float) -> list[Any]:
    return [obj["metadata"]["name"], obj["metadata"].get("creationTimestamp", "")]


def _lease(obj: Obj, now: float) -> list[Any]:
    return [obj["metadata"]["name"], (obj.get("spec") or {}).get("holderIdentity") or "<none>",
            since(obj["metadata"].get("creationTimestamp"), now)]


def _service(obj: Obj, now: float) -> list[Any]:
    spec = obj.get("spec") or {}
    ports = ",".join(f"{p.get('port')}" + (f":{p['nodePort']}" if p.get("nodePort") else "")
                     + f"/{p.get('protocol', 'TCP')}" for p in spec.get("ports") or [])
    ingress = ((obj.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
    external = ",".join(i.get("ip") or i.get("hostname", "") for i in ingress) or (
        "<pending>" if spec.get("type") == "LoadBalancer" else "<none>")
    selector = ",".join(f"{k}={v}" for k, v in sorted((spec.get("selector") or {}).items())) or "<none>"
    return [obj["metadata"]["name"], spec.get("type", "ClusterIP"), spec.get("clusterIP") or "<none>", external,
            ports or "<none>", since(obj["metadata"].get("creationTimestamp"), now), selector]


def _endpoints(obj: Obj, now: float) -> list[Any]:
    pairs = [f"{a['ip']}:{p['port']}" for s in obj.get("subsets") or [] for p in s.get("ports") or []
             for a in s.get("addresses") or []]
    shown = ",".join(pairs[:3]) + (f" + {len(pairs) - 3} more..." if len(pairs) > 3 else "")
    return [obj["metadata"]["name"], shown or "<none>", since(obj["metadata"].get("creationTimestamp"), now)]


def _endpointslice(obj: Obj, now: float) -> list[Any]:
    ports = ",".join(str(p.get("port")) for p in obj.get("ports") or []) or "<unset>"
    addrs = [a for e in obj.get("endpoints") or [] for a in e.get("addresses") or []]
    shown = ",".join(addrs[:3]) + (f" + {len(addrs) - 3} more..." if len(addrs) > 3 else "")
    return [obj["metadata"]["name"], obj.get("addressType", ""), ports, shown or "<unset>",
            since(obj["metadata"].get("creationTimestamp"), now)]


def _default(obj: Obj, now: float) -> list[Any]:
    return [obj["metadata"]["name"], since(obj["metadata"].get("creationTimestamp"), now)]


NAME: Column = ("Name", "string", 0, "Name must be unique within a namespace.")
AGE: Column = ("Age", "string", 0, "CreationTimestamp is a timestamp representing the server time when this "
                                   "object was created.")
WIDE_WORKLOAD: list[Column] = [("Containers", "string", 1, "Names of each container in the template."),
                               ("Images", "string", 1, "Images referenced by each container in the template."),
                               ("Selector", "string", 1, "Label selector for pods.")]

BINDING: list[Column] = [NAME, ("Role", "string", 0, "Role referenced by this binding."), AGE,
                         ("Users", "string", 1, "Users in the binding."),
                         ("Groups", "string", 1, "Groups in the binding."),
                         ("ServiceAccounts", "string", 1, "ServiceAccounts in the binding.")]

PRINTERS: dict[str, tuple[list[Column], Callable[[Obj, float], list[Any]]]] = {
    "deployments.apps": ([NAME, ("Ready", "string", 0, "Number of the pod with ready state"),
                          ("Up-to-date", "string", 0, "Total number of non-terminated pods targeted by this "
                                                      "deployment that have the desired template spec."),
                          ("Available", "string", 0, "Total number of available pods (ready for at least "
                                                     "minReadySeconds) targeted by this deployment."),
                          AGE, *WIDE_WORKLOAD], _deployment),
    "replicasets.apps": ([NAME, ("Desired", "integer", 0, "Replicas is the number of desired replicas."),
                          ("Current", "integer", 0, "Replicas is the most recently observed number of replicas."),
                          ("Ready", "integer", 0, "The number of ready replicas for this replica set."),
                          AGE, *WIDE_WORKLOAD], _replicaset),
    "pods": ([NAME, ("Ready", "string", 0, "The aggregate readiness state of this pod for accepting traffic."),
              ("Status", "string", 0, "The aggregate status of the containers in this pod."),
              ("Restarts", "string", 0, "The number of times the containers in this pod have been restarted "
                                        "and when the last container in this pod has restarted."),
              AGE, ("IP", "string", 1, "IP address allocated to the pod."),
              ("Node", "string", 1, "Name of the Node this pod is running on."),
              ("Nominated Node", "string", 1, "Name of the Node where this pod is nominated to run."),
              ("Readiness Gates", "string", 1, "Pod readiness gates.")], _pod),
    "nodes": ([NAME, ("Status", "string", 0, "The status of the node"),
               ("Roles", "string", 0, "The roles of the node"), AGE,
               ("Version", "string", 0, "Kubelet Version reported by the node."),
               ("Internal-IP", "string", 1, "List of internal IPs."),
               ("External-IP", "string", 1, "List of external IPs."),
               ("OS-Image", "string", 1, "OS image reported by the node."),
               ("Kernel-Version", "string", 1, "Kernel version reported by the node."),
               ("Container-Runtime", "string", 1, "Container runtime reported by the node.")], _node),
    "events": ([("Last Seen", "string", 0, "Time when last event occurred"),
                ("Type", "string", 0, "Type of event"), ("Reason", "string", 0, "Reason of event"),
                ("Object", "string", 0, "Object that the event is about"),
                ("Subobject", "string", 1, "Subobject the event is about"),
                ("Source", "string", 1, "Component that produced the event"),
                ("Message", "string", 0, "Human readable message of event"),
                ("First Seen", "string", 1, "Time when first event occurred"),
                ("Count", "integer", 1, "Number of occurrences"), ("Name", "string", 1, "Name of the event")],
               _event),
    "configmaps": ([NAME, ("Data", "string", 0, "Number of data entries."), AGE], _configmap),
    "secrets": ([NAME, ("Type", "string", 0, "The type of the secret"),
                 ("Data", "string", 0, "Number of data entries."), AGE], _secret),
    "services": ([NAME, ("Type", "string", 0, "The type of service."),
                  ("Cluster-IP", "string", 0, "The cluster IP of the service."),
                  ("External-IP", "string", 0, "The external IP of the service."),
                  ("Port(s)", "string", 0, "The ports of the service."), AGE,
                  ("Selector", "string", 1, "The label selector of the service.")], _service),
    "endpoints": ([NAME, ("Endpoints", "string", 0, "Endpoints of the service."), AGE], _endpoints),
    "endpointslices.discovery.k8s.io": ([NAME, ("AddressType", "string", 0, "Type of address."),
                                         ("Ports", "string", 0, "Ports of the EndpointSlice."),
                                         ("Endpoints", "string", 0, "Addresses of the endpoints."), AGE],
                                        _endpointslice),
    "namespaces": ([NAME, ("Status", "string", 0, "The status of the namespace"), AGE], _namespace),
    "httproutes.gateway.networking.k8s.io": ([NAME, ("Hostnames", "string", 0, ""), AGE], _httproute),
    "cronjobs.batch": ([NAME, ("Schedule", "string", 0, "The schedule in Cron format."),
                        ("Timezone", "string", 0, "The time zone name for the given schedule."),
                        ("Suspend", "boolean", 0, "Whether subsequent executions are suspended."),
                        ("Active", "integer", 0, "The number of active jobs."),
                        ("Last Schedule", "string", 0, "When the job was last scheduled."), AGE,
                        *WIDE_WORKLOAD], _cronjob),
    "leases.coordination.k8s.io": ([NAME, ("Holder", "string", 0, "Name of the Lease holder"), AGE], _lease),
    "roles.rbac.authorization.k8s.io": ([NAME, ("Created At", "string", 0, "")], _role),
    "clusterroles.rbac.authorization.k8s.io": ([NAME, ("Created At", "string", 0, "")], _role),
    "rolebindings.rbac.authorization.k8s.io": (BINDING, _binding),
    "clusterrolebindings.rbac.authorization.k8s.io": (BINDING, _binding),
}


def partial_metadata(obj: Obj) -> Obj:
    """Metadata-only row object, what kubectl asks for with includeObject=Metadata."""
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj.get("metadata", {})}


def table(resource_key: str, objects: list[Obj], now: float, *, resource_version: str | None,
          include_object: str = "Metadata") -> Obj:
    """A ``meta.k8s.io/v1`` Table of ``objects``; ``include_object`` is the request's includeObject."""
    columns, printer = PRINTERS.get(resource_key, ([NAME, AGE], _default))
    rows = []
    for obj in objects:
        row: Obj = {"cells": printer(obj, now)}
        if include_object == "Object":
            row["object"] = obj
        elif include_object != "None":
            row["object"] = partial_metadata(obj)
        rows.append(row)
    meta: Obj = {"resourceVersion": resource_version} if resource_version else {}
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": meta,
            "columnDefinitions": [{"name": n, "type": t, "format": "name" if n == "Name" else "",
                                   "description": d, "priority": p} for n, t, p, d in columns],
            "rows": rows}
