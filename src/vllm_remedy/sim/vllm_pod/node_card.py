"""The node's card, others' memory on it and a container's GPUs: the exporter, nvidia-smi and exec read them too."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vllm_remedy.errors import UserError
from vllm_remedy.sim.vllm_pod import keys
from vllm_remedy.vllm import catalog, gpu_catalog
from vllm_remedy.vllm.catalog import GpuSpec

# nvidia-smi MiB → the total torch sees: the catalog's cards sit 0.55-0.6 GiB below nvidia-smi
# (L40S 46068 MiB → 44.42 GiB); 0.6 keeps unknown cards on the safe side like the catalog does.
DRIVER_RESERVE_GIB = 0.6


def node_gpu(node: Mapping[str, Any]) -> GpuSpec | None:
    """The node's GPU from its labels: catalog product first, else the labelled memory size."""
    labels = keys.labels(dict(node))
    for key in keys.GPU_PRODUCT_LABELS:
        value = labels.get(key)
        if value:
            try:
                return catalog.gpu(str(value))
            except UserError:
                continue
    product = next((str(labels[k]) for k in keys.GPU_PRODUCT_LABELS if labels.get(k)), "unknown-gpu")
    for key in keys.GPU_MEMORY_LABELS:
        try:
            mib = int(str(labels.get(key, "")).strip())
        except ValueError:
            continue
        if mib > 0:
            total = round(mib / 1024 - DRIVER_RESERVE_GIB, 2)
            return GpuSpec(product=product, total_gib=total, compute_capability=gpu_catalog.UNKNOWN_CAPABILITY,
                           fp8=False, memory_mib=mib)
    return None


def other_process_gib(node: Mapping[str, Any], cluster_mib: int) -> float:
    """GPU memory held by processes outside Kubernetes: the node annotation, else the cluster's figure."""
    raw = keys.annotations(dict(node)).get(keys.GPU_USED_GIB)
    if raw is not None:
        try:
            return max(0.0, float(str(raw).strip()))
        except ValueError:
            pass
    return max(0, cluster_mib) / 1024


def gpu_limit(container: Mapping[str, Any]) -> int:
    """GPUs the device plugin hands the container (``nvidia.com/gpu``, limits before requests); 0 when
    unset or not whole, so vLLM sees no device, as in a pod without the limit."""
    resources = container.get("resources") or {}
    for part in ("limits", "requests"):
        value = (resources.get(part) or {}).get("nvidia.com/gpu")
        if value is not None:
            try:
                return int(str(value))
            except ValueError:
                return 0
    return 0
