"""The part of each kubelet that reports its node: the full ``nodeInfo`` and the node's Lease.

A kubelet registers its node with every ``status.nodeInfo`` field (boot and machine IDs included) and
creates ``kube-node-lease/<node>``; clients deserialise against that shape (the official Python client
refuses a Node without ``bootID``). Nodes written by a seed or a test carry only some fields, so
missing ones are filled here, derived from the node's name so a world always reads the same. The
heartbeats themselves (Lease ``renewTime``, conditions' ``lastHeartbeatTime``) are not written: the API
shows the latest beat at read time (``api.heartbeats``), which costs nothing while the cluster idles.
"""

from __future__ import annotations

import contextlib
import uuid
from typing import Any

from vllm_remedy.sim.clock import Clock
from vllm_remedy.sim.controllers.manager import Manager
from vllm_remedy.sim.store import ApiError, Store

Obj = dict[str, Any]
LEASE_NAMESPACE = "kube-node-lease"
LEASE_SECONDS = 40  # kubelet's nodeLeaseDurationSeconds
KUBELET_VERSION = "v1.32.4"


def node_info(name: str, current: Obj) -> Obj:
    """``status.nodeInfo`` with every field a kubelet reports, keeping the ones already set."""
    machine = uuid.uuid5(uuid.NAMESPACE_DNS, f"machine.{name}")
    defaults = {"machineID": machine.hex, "systemUUID": str(uuid.uuid5(uuid.NAMESPACE_DNS, f"system.{name}")),
                "bootID": str(uuid.uuid5(uuid.NAMESPACE_DNS, f"boot.{name}")), "kernelVersion": "6.8.0-1021-gcp",
                "osImage": "Ubuntu 22.04.5 LTS", "containerRuntimeVersion": "containerd://1.7.24",
                "kubeletVersion": KUBELET_VERSION, "kubeProxyVersion": KUBELET_VERSION,
                "operatingSystem": "linux", "architecture": "amd64"}
    return {**defaults, **{k: v for k, v in current.items() if v not in (None, "")}}


def lease(node: Obj, renew: str) -> Obj:
    """The node's heartbeat Lease, owned by the Node as the kubelet creates it."""
    meta = node["metadata"]
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": meta["name"], "namespace": LEASE_NAMESPACE,
                         "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": meta["name"],
                                              "uid": meta.get("uid", "")}]},
            "spec": {"holderIdentity": meta["name"], "leaseDurationSeconds": LEASE_SECONDS, "renewTime": renew}}


class NodeReporter:
    """Completes a node's ``nodeInfo`` and creates its Lease once, when the node appears."""

    def __init__(self, store: Store, clock: Clock, manager: Manager) -> None:
        self.store, self.clock, self.manager = store, clock, manager
        manager.register("node-reporter", self.sync)

    def on_node(self, name: str, obj: Obj, kind: str) -> None:
        """Informer hook (under the store lock): queue the node, never write from here."""
        if kind in ("ADDED", "MODIFIED"):
            info = (obj.get("status") or {}).get("nodeInfo") or {}
            if kind == "ADDED" or info != node_info(name, info):
                self.manager.enqueue("node-reporter", "", name)

    def sync(self, _namespace: str, name: str) -> None:
        """Fill missing nodeInfo fields; create the Lease if there is none."""
        node = self.store.find("nodes", "", name)
        if node is None:
            return
        status = node.setdefault("status", {})
        info = status.get("nodeInfo") or {}
        born = node["metadata"].get("creationTimestamp", "")
        stale = [c for c in status.get("conditions") or [] if c.get("lastTransitionTime", "") < born]
        if info != node_info(name, info) or stale:
            status["nodeInfo"] = node_info(name, info)
            for condition in stale:  # a seed's placeholder times: the node was registered when it was created
                condition["lastTransitionTime"] = condition["lastHeartbeatTime"] = born
            try:
                node = self.store.update("nodes", node, status=True)
            except ApiError:
                self.manager.requeue_after(1.0, "node-reporter", "", name)
                return
        if self.store.find("leases.coordination.k8s.io", LEASE_NAMESPACE, name) is None:
            renew = self.clock.timestamp().replace("Z", ".000000Z")
            with contextlib.suppress(ApiError):  # created meanwhile
                self.store.create("leases.coordination.k8s.io", lease(node, renew))
