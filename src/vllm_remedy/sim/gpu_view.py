"""A node's GPUs as ``nvidia-smi`` sees them: cards, memory in MiB, and the processes holding it.

The numbers are the DCGM exporter's (``dcgm_exporter``): devices handed to GPU pods in creation order, the
memory each running container holds, plus memory held by processes outside Kubernetes (the node's
``sim.vllm-remedy.io/gpu-used-gib``, else ``Cluster.set_node_gpu_used``) on every card. Process IDs are
derived from pod and node names, so the same world always prints the same table.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

from vllm_remedy.sim.dcgm_exporter import DRIVER, GpuHost, devices, gpu_uuid
from vllm_remedy.sim.vllm_pod.node_card import node_gpu, other_process_gib

CUDA = "12.8"  # the newest CUDA the 570 driver supports: nvidia-smi's banner shows the driver's, not the image's
FOREIGN_PROCESS = "/opt/conda/bin/python3"  # the stuck training job of the gpu-memory-held world
VLLM_PROCESS = "/usr/bin/python3"  # vllm/vllm-openai runs the API server under the system Python


@dataclass(frozen=True)
class GpuProcess:
    """One compute process on a card; ``pod`` is None for a process outside Kubernetes."""

    pid: int
    name: str
    used_mib: int
    pod: tuple[str, str] | None = None


@dataclass(frozen=True)
class GpuCard:
    """One card: nvidia-smi's Name, Bus-Id, Memory-Usage and its processes."""

    index: int
    name: str
    uuid: str
    bus_id: str
    total_mib: int
    used_mib: int
    processes: tuple[GpuProcess, ...]
    owners: tuple[tuple[str, str, str], ...]  # (namespace, pod, container) the device plugin gave it to


def pid_of(*parts: str) -> int:
    """A stable host PID for a process (kernel PIDs sit below 4194304)."""
    return 1000 + zlib.crc32("/".join(parts).encode()) % 4_000_000


def node_cards(host: GpuHost, node_name: str) -> list[GpuCard]:
    """Every GPU of ``node_name`` now (empty for a node without GPUs)."""
    node = host.store.find("nodes", "", node_name) or {}
    count = int(str(((node.get("status") or {}).get("capacity") or {}).get("nvidia.com/gpu", 0)) or 0)
    spec = node_gpu(node)
    if spec is None or count <= 0:
        return []
    total = int(spec.memory_mib or round((spec.total_gib + 0.6) * 1024))
    reserved = max(0, total - round(spec.total_gib * 1024))
    foreign = round(other_process_gib(node, host.node_gpu_used_mib.get(node_name, 0)) * 1024)
    held = host.gpu_memory(node_name)
    cards = []
    for index, owners in enumerate(devices(host.store, node_name, count)):
        procs = [GpuProcess(pid_of(ns, pod, container), VLLM_PROCESS, round(held.get((ns, pod), 0.0) * 1024), (ns, pod))
                 for ns, pod, container in owners if held.get((ns, pod), 0.0) > 0]
        if foreign > 0:
            procs.insert(0, GpuProcess(pid_of(node_name, "foreign"), FOREIGN_PROCESS, foreign))
        used = min(total - reserved, sum(p.used_mib for p in procs))
        cards.append(GpuCard(index, spec.product.replace("-", " "), gpu_uuid(node_name, index),
                             f"00000000:00:{0x1E + index:02X}.0", total, used, tuple(procs), tuple(owners)))
    return cards


__all__ = ["CUDA", "DRIVER", "GpuCard", "GpuProcess", "node_cards"]
