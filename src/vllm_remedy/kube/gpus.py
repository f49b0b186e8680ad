"""Which GPU a pod got and what else asks for GPUs on that node, from Node and Pod dicts.

The product comes from GPU feature discovery (``nvidia.com/gpu.product``, where time-slicing appends
``-SHARED`` and MIG "single" rewrites it, e.g. ``A100-SXM4-40GB-MIG-1g.5gb``), else GKE's
``cloud.google.com/gke-accelerator``, else Karpenter's ``karpenter.k8s.aws/instance-gpu-name``.
Requests follow the scheduler: extended resources request what they limit, and a pod needs
max(sum of containers, largest init container); finished pods hold nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from vllm_remedy.vllm.catalog import PRODUCT_LABELS

GPU = "nvidia.com/gpu"
MEMORY_LABEL = "nvidia.com/gpu.memory"  # MiB
SHARED_SUFFIX = "-SHARED"


def _int(value: Any) -> int:
    try:
        return int(str(value))
    except ValueError:
        return 0


def _container_gpus(container: Mapping[str, Any]) -> int:
    res = container.get("resources") or {}
    limit = (res.get("limits") or {}).get(GPU)
    request = (res.get("requests") or {}).get(GPU)
    return _int(request if request is not None else limit or 0)


def pod_gpu_request(pod_or_spec: Mapping[str, Any]) -> int:
    """GPUs the scheduler reserves for a pod (or a pod spec)."""
    spec = pod_or_spec.get("spec", pod_or_spec)
    main = sum(_container_gpus(c) for c in spec.get("containers") or [])
    init = max((_container_gpus(c) for c in spec.get("initContainers") or []), default=0)
    return max(main, init)


def holds_resources(pod: Mapping[str, Any]) -> bool:
    """Finished pods no longer hold GPUs, so they must not count against a node's free GPUs."""
    return (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")


@dataclass(frozen=True)
class GpuProduct:
    """The product label as found, and what it means: base name, time-sliced, MIG profile."""

    label: str | None
    value: str | None
    base: str | None
    shared: bool
    mig_profile: str | None


def gpu_product(labels: Mapping[str, str] | None) -> GpuProduct:
    """The GPU model from the node's labels, which the memory estimate depends on."""
    labels = labels or {}
    for key in PRODUCT_LABELS:
        value = labels.get(key)
        if value:
            base, shared = value, value.endswith(SHARED_SUFFIX)
            if shared:
                base = base[: -len(SHARED_SUFFIX)]
            mig = None
            if "-MIG-" in base:
                base, mig = base.split("-MIG-", 1)
            return GpuProduct(key, value, base, shared, mig)
    return GpuProduct(None, None, None, False, None)


@dataclass(frozen=True)
class NodeGpus:
    """One node's GPU capacity and use, to tell whether a pod could be rescheduled there."""

    node: str
    product: GpuProduct
    memory_mib: int | None
    allocatable: int
    capacity: int
    requested: int
    consumers: tuple[tuple[str, int], ...]  # ("namespace/pod", gpus) of every pod holding GPUs here

    @property
    def free(self) -> int:
        """GPUs no pod has requested; never negative even if the node over-reports requests."""
        return max(0, self.allocatable - self.requested)


def node_gpus(node: Mapping[str, Any], pods: Iterable[Mapping[str, Any]]) -> NodeGpus:
    """GPU picture of one node given the pods bound to it (others are ignored)."""
    meta, status = node.get("metadata") or {}, node.get("status") or {}
    name = str(meta.get("name", ""))
    consumers = []
    for pod in pods:
        if (pod.get("spec") or {}).get("nodeName") != name or not holds_resources(pod):
            continue
        gpus = pod_gpu_request(pod)
        if gpus:
            pm = pod.get("metadata") or {}
            consumers.append((f"{pm.get('namespace', '')}/{pm.get('name', '')}", gpus))
    labels = meta.get("labels") or {}
    memory = labels.get(MEMORY_LABEL)
    return NodeGpus(node=name, product=gpu_product(labels), memory_mib=_int(memory) if memory else None,
                    allocatable=_int((status.get("allocatable") or {}).get(GPU, 0)),
                    capacity=_int((status.get("capacity") or {}).get(GPU, 0)),
                    requested=sum(g for _, g in consumers), consumers=tuple(sorted(consumers)))


@dataclass(frozen=True)
class PodGpu:
    """The GPU a pod got: its node's product, how many it asked for, and who else uses that node's GPUs."""

    pod: str
    node: str | None
    gpus: int
    node_gpus: NodeGpus | None
    others: tuple[tuple[str, int], ...]


def pod_gpu(pod: Mapping[str, Any], node: Mapping[str, Any] | None, pods_on_node: Iterable[Mapping[str, Any]]
            ) -> PodGpu:
    """Which GPU a pod runs on and what else holds GPUs on its node, to judge it on its real hardware."""
    meta = pod.get("metadata") or {}
    me = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
    picture = node_gpus(node, pods_on_node) if node else None
    others = tuple(c for c in picture.consumers if c[0] != me) if picture else ()
    return PodGpu(pod=me, node=(pod.get("spec") or {}).get("nodeName"), gpus=pod_gpu_request(pod),
                  node_gpus=picture, others=others)


def affinity_products(spec: Mapping[str, Any]) -> list[str]:
    """GPU product values a pod spec's required node affinity allows (``In`` on a product label), in order."""
    node = ((spec.get("affinity") or {}).get("nodeAffinity") or {})
    required = node.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    out: list[str] = []
    for term in required.get("nodeSelectorTerms") or []:
        for expr in (term or {}).get("matchExpressions") or []:
            if expr.get("key") in PRODUCT_LABELS and expr.get("operator") == "In":
                out += [str(v) for v in expr.get("values") or [] if str(v) not in out]
    return out
