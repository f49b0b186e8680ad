"""Endpoints and EndpointSlices: which pods a Service sends traffic to, as the endpoint controllers write them.

A Service with a selector gets one Endpoints object (its name) and one EndpointSlice (``<name>-<hash>``)
listing the matching pods that have an IP: Ready pods as ``addresses`` / ``ready: true``, the others as
``notReadyAddresses`` / ``ready: false``; terminating pods drop out. So ``kubectl get endpoints`` shows a
crash-looping vLLM leave the Service, and a gateway's view of "no healthy upstream" can be rehearsed.
``desired_*`` are pure; ``EndpointsController`` writes them from the cluster's controller thread.
"""

from __future__ import annotations

import contextlib
import hashlib
from typing import Any

from vllm_remedy.sim.controllers.manager import Manager
from vllm_remedy.sim.store import ApiError, Event, Store

Obj = dict[str, Any]
QUEUE = "endpoints"
ALL = ""  # queue name for "every Service in the namespace" (a pod changed)
MANAGED_BY = "endpointslice-controller.k8s.io"


def _selects(service: Obj, pod: Obj) -> bool:
    selector = (service.get("spec") or {}).get("selector") or {}
    labels = pod.get("metadata", {}).get("labels") or {}
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def _ready(pod: Obj) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


def _members(service: Obj, pods: list[Obj]) -> list[tuple[Obj, bool]]:
    """(pod, ready) for the pods that receive the Service's traffic, by name."""
    out = []
    for pod in pods:
        status = pod.get("status") or {}
        if not _selects(service, pod) or not status.get("podIP") or pod["metadata"].get("deletionTimestamp") \
                or status.get("phase") in ("Succeeded", "Failed"):
            continue
        out.append((pod, _ready(pod)))
    return sorted(out, key=lambda m: m[0]["metadata"]["name"])


def _ports(service: Obj, pods: list[Obj], slice_: bool = False) -> list[Obj]:
    """The Service's ports with named targetPorts resolved against the first pod that declares them.

    An EndpointSlice port always carries ``name`` (``""`` for an unnamed port, as the controller writes it:
    kubectl's describe dereferences it); an Endpoints port omits an empty one."""
    declared = {p.get("name"): p.get("containerPort") for pod in reversed(pods)
                for c in (pod.get("spec") or {}).get("containers") or [] for p in c.get("ports") or []}
    out = []
    for port in (service.get("spec") or {}).get("ports") or []:
        target = port.get("targetPort", port.get("port"))
        number = declared.get(target) if isinstance(target, str) and not target.isdigit() else int(target)
        if number is None:
            continue
        entry: Obj = {"port": int(number), "protocol": port.get("protocol", "TCP")}
        if port.get("name") or slice_:
            entry["name"] = port.get("name") or ""
        out.append(entry)
    return out


def _target(pod: Obj) -> Obj:
    meta = pod["metadata"]
    return {"kind": "Pod", "namespace": meta.get("namespace", ""), "name": meta["name"], "uid": meta.get("uid", "")}


def desired_endpoints(service: Obj, pods: list[Obj]) -> Obj:
    """The core/v1 Endpoints object for ``service``; no ``subsets`` when no pod qualifies, as kube omits it."""
    meta = service["metadata"]
    members = _members(service, pods)
    obj: Obj = {"apiVersion": "v1", "kind": "Endpoints",
                "metadata": {"name": meta["name"], "namespace": meta.get("namespace", ""),
                             "labels": dict(meta.get("labels") or {})}}
    ports = _ports(service, [p for p, _ in members])
    if members and ports:
        addresses = [{"ip": p["status"]["podIP"], "nodeName": p["spec"].get("nodeName", ""),
                      "targetRef": _target(p)} for p, _ in members]
        subset: Obj = {"ports": ports}
        ready = [a for a, (_, ok) in zip(addresses, members, strict=True) if ok]
        not_ready = [a for a, (_, ok) in zip(addresses, members, strict=True) if not ok]
        if ready:
            subset["addresses"] = ready
        if not_ready:
            subset["notReadyAddresses"] = not_ready
        obj["subsets"] = [subset]
    return obj


def slice_name(service: Obj) -> str:
    """A stable generated name (the real controller appends five random characters)."""
    meta = service["metadata"]
    return f"{meta['name']}-" + hashlib.sha256(meta.get("uid", meta["name"]).encode()).hexdigest()[:5]


def desired_slice(service: Obj, pods: list[Obj]) -> Obj:
    """The discovery.k8s.io/v1 EndpointSlice for ``service`` (``endpoints`` always present, even empty)."""
    meta = service["metadata"]
    members = _members(service, pods)
    labels = {**(meta.get("labels") or {}), "kubernetes.io/service-name": meta["name"],
              "endpointslice.kubernetes.io/managed-by": MANAGED_BY}
    owner = {"apiVersion": "v1", "kind": "Service", "name": meta["name"], "uid": meta.get("uid", ""),
             "controller": True, "blockOwnerDeletion": True}
    endpoints = [{"addresses": [p["status"]["podIP"]], "nodeName": p["spec"].get("nodeName", ""),
                  "conditions": {"ready": ok, "serving": ok, "terminating": False}, "targetRef": _target(p)}
                 for p, ok in members]
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": slice_name(service), "generateName": f"{meta['name']}-",
                         "namespace": meta.get("namespace", ""), "labels": labels, "ownerReferences": [owner]},
            "addressType": "IPv4", "endpoints": endpoints,
            "ports": _ports(service, [p for p, _ in members], slice_=True)}


class EndpointsController:
    """Keeps each selector Service's Endpoints and EndpointSlice in step with its pods."""

    def __init__(self, store: Store, manager: Manager) -> None:
        self.store = store
        manager.register(QUEUE, self.reconcile)
        self._manager = manager
        store.subscribe(self._on_change)

    def _on_change(self, event: Event) -> None:
        if event.resource == "services":
            self._manager.enqueue(QUEUE, event.namespace, event.object["metadata"]["name"])
        elif event.resource == "pods":
            self._manager.enqueue(QUEUE, event.namespace, ALL)

    def resync(self) -> None:
        """Reconcile every Service (controller start, or after a restore emitted no events)."""
        for service in self.store.list("services")[0]:
            self._manager.enqueue(QUEUE, service["metadata"].get("namespace", ""), service["metadata"]["name"])

    def reconcile(self, namespace: str, name: str) -> None:
        """Write the Endpoints/EndpointSlice of one Service, or of every Service in the namespace."""
        services = self.store.list("services", namespace)[0]
        if name == ALL and not services:
            return  # most pod changes: no Service in the namespace, nothing to compute
        if name != ALL:
            services = [s for s in services if s["metadata"]["name"] == name]
            if not services:
                self._remove(namespace, name)
                return
        pods = self.store.list("pods", namespace)[0]
        for service in services:
            if (service.get("spec") or {}).get("selector"):
                self._put("endpoints", desired_endpoints(service, pods), ("subsets",))
                self._put("endpointslices.discovery.k8s.io", desired_slice(service, pods),
                          ("addressType", "endpoints", "ports"))

    def _put(self, resource: str, want: Obj, fields: tuple[str, ...]) -> None:
        meta = want["metadata"]
        current = self.store.find(resource, meta["namespace"], meta["name"])
        try:
            if current is None:
                self.store.create(resource, want)
                return
            current["metadata"]["labels"] = meta["labels"]
            for key in fields:
                current.pop(key, None)
                if key in want:
                    current[key] = want[key]
            current["metadata"].pop("resourceVersion", None)
            self.store.update(resource, current)  # a no-op (no event) when nothing changed
        except ApiError:
            self._manager.requeue_after(1.0, QUEUE, meta["namespace"], ALL)

    def _remove(self, namespace: str, name: str) -> None:
        """The Service is gone: so are its Endpoints and EndpointSlices."""
        gone = [("endpoints", name)] + [
            ("endpointslices.discovery.k8s.io", s["metadata"]["name"])
            for s in self.store.list("endpointslices.discovery.k8s.io", namespace)[0]
            if (s["metadata"].get("labels") or {}).get("kubernetes.io/service-name") == name]
        for resource, obj_name in gone:
            with contextlib.suppress(ApiError):  # already deleted (cascade from the Service, or by a user)
                self.store.delete(resource, namespace, obj_name)
