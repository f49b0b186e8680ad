"""Scenario annotations the vLLM simulator reads: environment facts no Kubernetes object carries.

Game days and tests set these with ``kubectl annotate``; real clusters never have them, so they
can never change what the product does on a real cluster.

On a Node:
  ``sim.vllm-remedy.io/gpu-used-gib``  GiB of GPU memory held on each of the node's GPUs by a process
                                       outside Kubernetes (a stuck job, a debug session). Overrides the
                                       cluster's ``Cluster.set_node_gpu_used`` figure for that node.
On a Deployment or Pod (the pod's own annotation wins):
  ``sim.vllm-remedy.io/load``          offered load, see ``vllm_remedy.sim.load`` for the syntax.
On a Pod (via the pod template), or on a Deployment to hit its next container starts without a rollout:
  ``sim.vllm-remedy.io/oom-killed``    "true": the kernel's OOM killer ends the container while it reads
                                       the checkpoint (host RAM, not GPU): exit 137, reason OOMKilled.
"""

from __future__ import annotations

from typing import Any

from vllm_remedy.vllm.catalog import PRODUCT_LABELS

PREFIX = "sim.vllm-remedy.io/"
GPU_USED_GIB = PREFIX + "gpu-used-gib"
LOAD = PREFIX + "load"
OOM_KILLED = PREFIX + "oom-killed"

# Node labels that name the GPU (GPU feature discovery, GKE, Karpenter), in the order they are trusted.
GPU_PRODUCT_LABELS = PRODUCT_LABELS
# Node labels that give the card's memory in MiB (nvidia-smi total), for cards the catalog lacks.
GPU_MEMORY_LABELS = ("nvidia.com/gpu.memory", "karpenter.k8s.aws/instance-gpu-memory")


def annotations(obj: dict[str, Any] | None) -> dict[str, Any]:
    """None-safe ``metadata.annotations``: callers pass ``Store.find`` results, which may be None."""
    return ((obj or {}).get("metadata") or {}).get("annotations") or {}


def labels(obj: dict[str, Any] | None) -> dict[str, Any]:
    """None-safe ``metadata.labels``: a node without labels reads as empty, not as an error."""
    return ((obj or {}).get("metadata") or {}).get("labels") or {}


def truthy(value: Any) -> bool:
    """Annotation values are strings; accept the spellings people type in ``kubectl annotate``."""
    return str(value).strip().lower() in ("true", "1", "yes", "on")


#: What the LeaderWorkerSet controller stamps on every pod of a group: how many pods the group has.
LWS_SIZE = "leaderworkerset.sigs.k8s.io/size"


def group_size(pod: dict[str, Any] | None) -> int:
    """Pods in this pod's multi-node group (1 for a pod that is not part of one)."""
    try:
        return max(1, int(str(annotations(pod).get(LWS_SIZE, "1"))))
    except ValueError:
        return 1
