"""The GPU nodes of an ``@k8s`` host's cluster: product, memory, how many GPUs are free, and who holds them.

Step 3 of the runbook asks which GPU the pod got and what else is on the node; step 4 pins a GPU product
and must not pin to one with no schedulable capacity. Products are read as ``kube.gpus`` does (GPU feature
discovery, GKE, Karpenter labels; ``-SHARED`` and MIG variants folded to a base product), so the
per-product totals here are what ``pin_gpu`` can count on.

    pyinfra inventories/local.py fact vllm_remedy.facts.nodes.GpuNodes
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vllm_remedy.facts.base import JsonFact
from vllm_remedy.kube.gpus import GPU, node_gpus
from vllm_remedy.kube.health import node_health
from vllm_remedy.kube.selectors import matches


def _ours(pod: Mapping[str, Any], namespace: str, selector: Mapping[str, Any]) -> bool:
    meta = pod.get("metadata") or {}
    return meta.get("namespace") == namespace and bool(selector) and matches(selector, meta.get("labels"))


def node_row(node: Mapping[str, Any], pods: list[Mapping[str, Any]], namespace: str,
             selector: Mapping[str, Any]) -> dict[str, Any]:
    """One GPU node as plain data: product as ``kube.gpus`` reads it, free GPUs, schedulable or not, and who holds
    its GPUs, with this Deployment's own pods flagged (step 3: what else is on the card)."""
    picture = node_gpus(node, pods)
    health = node_health(node)
    ours = {f"{(p.get('metadata') or {}).get('namespace')}/{(p.get('metadata') or {}).get('name')}"
            for p in pods if _ours(p, namespace, selector)}
    taints = [{k: t.get(k) for k in ("key", "value", "effect") if t.get(k) is not None}
              for t in (node.get("spec") or {}).get("taints") or []]
    product = picture.product
    return {
        "name": picture.node,
        "product": product.value,
        "product_label": product.label,
        "base_product": product.base,
        "shared": product.shared,
        "mig_profile": product.mig_profile,
        "memory_mib": picture.memory_mib,
        "capacity": picture.capacity,
        "allocatable": picture.allocatable,
        "requested": picture.requested,
        "free": picture.free,
        "ready": health.ready,
        "cordoned": health.cordoned,
        "schedulable": health.ready and not health.cordoned,
        "pressure": list(health.pressure),
        "taints": taints,
        "consumers": [{"pod": pod, "gpus": gpus, "ours": pod in ours} for pod, gpus in picture.consumers],
    }


def nodes_data(nodes: list[Mapping[str, Any]], pods: list[Mapping[str, Any]], namespace: str = "",
               selector: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Plain-data GPU picture (pure): GPU nodes only, plus totals per base product."""
    selector = selector or {}
    rows = [node_row(n, pods, namespace, selector) for n in
            sorted(nodes, key=lambda n: (n.get("metadata") or {}).get("name", ""))
            if int(str(((n.get("status") or {}).get("capacity") or {}).get(GPU, 0)) or 0) > 0]
    products: dict[str, dict[str, int]] = {}
    for row in rows:
        key = row["base_product"] or "unknown"
        total = products.setdefault(key, {"nodes": 0, "allocatable": 0, "requested": 0, "free": 0,
                                          "schedulable_free": 0})
        total["nodes"] += 1
        total["allocatable"] += row["allocatable"]
        total["requested"] += row["requested"]
        total["free"] += row["free"]
        total["schedulable_free"] += row["free"] if row["schedulable"] else 0
    placed = {c["pod"]: row["name"] for row in rows for c in row["consumers"] if c["ours"]}
    return {"nodes": rows, "products": dict(sorted(products.items())), "deployment_pods": dict(sorted(placed.items()))}


class GpuNodes(JsonFact[dict[str, Any]]):
    """``nodes`` (GPU nodes with product, free GPUs, consumers), ``products`` (totals) and ``deployment_pods``."""

    def command(self) -> str:
        return "k8s-nodes"

    def build(self, document: dict[str, Any]) -> dict[str, Any]:
        return nodes_data(list(document.get("nodes") or []), list(document.get("pods") or []),
                          str(document.get("namespace") or ""), document.get("selector") or {})


class NodeObjects(JsonFact[dict[str, Any]]):
    """Raw GPU picture for pinning: every Node (all labels kept) and the pods holding GPUs, with our selector.

    ``GpuNodes`` summarises per node under the first product label it finds; pinning needs the value under
    the *policy's* label key, hence the raw objects (the same ``k8s-nodes`` read).
    """

    def command(self) -> str:
        return "k8s-nodes"

    def build(self, document: dict[str, Any]) -> dict[str, Any]:
        return {"nodes": list(document.get("nodes") or []), "pods": list(document.get("pods") or []),
                "namespace": document.get("namespace"), "selector": document.get("selector") or {}}
