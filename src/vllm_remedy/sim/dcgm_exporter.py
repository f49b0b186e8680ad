"""NVIDIA's DCGM exporter on the rehearsal cluster: a pod per GPU node that serves the node's GPU telemetry.

On a real cluster the GPU operator runs ``nvidia-dcgm-exporter`` (namespace ``gpu-operator``, label
``app=nvidia-dcgm-exporter``, port 9400) on every GPU node; its ``/metrics`` says per GPU how much framebuffer
memory is used and free (MiB) and, with Kubernetes pod mapping on, which pod the device plugin gave that GPU. Here
the same pod runs on the exporter runtime below, and its numbers come from the cluster's own GPU state: devices
handed out to GPU-requesting pods in the order they were created (as the device plugin hands them out), the memory
each running container holds (``ContainerRun.gpu_gib``: the vLLM simulator's memory model), plus memory held by
processes outside Kubernetes (``sim.vllm-remedy.io/gpu-used-gib`` on the node, else ``Cluster.set_node_gpu_used``).
Line format and label names follow dcgm-exporter 4.x's renderer (``gpu``, ``UUID``, ``pci_bus_id``, ``device``,
``modelName``, ``Hostname`` — the exporter pod's own host name — then ``container``, ``namespace``, ``pod``).
"""

from __future__ import annotations

import uuid
from typing import Any, Protocol

from vllm_remedy.sim.clock import Clock
from vllm_remedy.sim.runtime import ContainerContext, ContainerRun, HttpReply, LogLine
from vllm_remedy.sim.store import Store
from vllm_remedy.sim.vllm_pod.node_card import gpu_limit, node_gpu, other_process_gib

Obj = dict[str, Any]
NAMESPACE = "gpu-operator"
LABELS = {"app": "nvidia-dcgm-exporter", "app.kubernetes.io/managed-by": "gpu-operator"}
IMAGE = "nvcr.io/nvidia/k8s/dcgm-exporter:4.5.3-4.8.2-ubuntu22.04"
PORT = 9400
DRIVER = "570.172.08"
READY_AFTER = 6.0  # simulated seconds: the embedded host engine starts, then the web server
_METRICS = "text/plain; version=0.0.4; charset=utf-8"
_FAMILIES = (("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %)."),
             ("DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB)."),
             ("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB)."),
             ("DCGM_FI_DEV_FB_RESERVED", "Framebuffer memory reserved (in MiB)."))


class GpuHost(Protocol):
    """What the exporter reads from its cluster: objects, foreign GPU memory, and what containers hold now."""

    store: Store
    clock: Clock
    node_gpu_used_mib: dict[str, int]

    def gpu_memory(self, node: str) -> dict[tuple[str, str], float]: ...


def is_exporter(pod: Obj, container: Obj) -> bool:
    """The runtime rule: a container running NVIDIA's dcgm-exporter image."""
    return "dcgm-exporter" in str(container.get("image", ""))


def exporter_pod(node: Obj) -> Obj:
    """The pod the GPU operator's DaemonSet would place on ``node`` (name suffix derived from the node)."""
    name = node["metadata"]["name"]
    suffix = uuid.uuid5(uuid.NAMESPACE_DNS, name).hex[:5]
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": f"nvidia-dcgm-exporter-{suffix}", "namespace": NAMESPACE, "labels": dict(LABELS)},
        "spec": {"nodeName": name, "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists",
                                                     "effect": "NoSchedule"}],
                 "containers": [{"name": "nvidia-dcgm-exporter", "image": IMAGE,
                                 "env": [{"name": "DCGM_EXPORTER_LISTEN", "value": f":{PORT}"},
                                         {"name": "DCGM_EXPORTER_KUBERNETES", "value": "true"}],
                                 "ports": [{"name": "metrics", "containerPort": PORT, "protocol": "TCP"}],
                                 "readinessProbe": {"httpGet": {"path": "/health", "port": PORT},
                                                    "initialDelaySeconds": 5, "periodSeconds": 5}}]},
    }


def gpu_uuid(node: str, index: int) -> str:
    """A card's UUID, stable per node and index, so DCGM's labels and nvidia-smi name the same card."""
    raw = uuid.uuid5(uuid.NAMESPACE_URL, f"gpu:{node}:{index}")
    return f"GPU-{raw}"


def _gpu_pods(store: Store, node: str) -> list[Obj]:
    """Active pods on ``node`` that were given GPUs, in the order the device plugin served them."""
    pods = [p for p in store.list("pods")[0] if (p.get("spec") or {}).get("nodeName") == node
            and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
            and any(gpu_limit(c) > 0 for c in (p.get("spec") or {}).get("containers") or [])]
    return sorted(pods, key=lambda p: (p["metadata"].get("creationTimestamp", ""), p["metadata"]["name"]))


def devices(store: Store, node: str, count: int) -> list[list[tuple[str, str, str]]]:
    """Per GPU index, the (namespace, pod, container) it was handed to (empty: no pod holds it)."""
    out: list[list[tuple[str, str, str]]] = [[] for _ in range(count)]
    nxt = 0
    for pod in _gpu_pods(store, node):
        for c in pod["spec"].get("containers") or []:
            for _ in range(gpu_limit(c)):
                if nxt < count:
                    out[nxt].append((pod["metadata"]["namespace"], pod["metadata"]["name"], c.get("name", "")))
                    nxt += 1
    return out


def exposition(host: GpuHost, node_name: str, hostname: str) -> str:
    """The node's ``/metrics`` now, in dcgm-exporter's text format."""
    node = host.store.find("nodes", "", node_name) or {}
    count = int(str(((node.get("status") or {}).get("capacity") or {}).get("nvidia.com/gpu", 0)) or 0)
    spec = node_gpu(node)
    if spec is None or count <= 0:
        return ""
    total = int(spec.memory_mib or round((spec.total_gib + 0.6) * 1024))
    reserved = max(0, total - round(spec.total_gib * 1024))
    foreign = other_process_gib(node, host.node_gpu_used_mib.get(node_name, 0)) * 1024
    held = host.gpu_memory(node_name)
    model = spec.product.replace("-", " ")
    rows: dict[str, list[str]] = {name: [] for name, _ in _FAMILIES}
    for index, owners in enumerate(devices(host.store, node_name, count)):
        used = round(min(total - reserved, foreign + sum(held.get((ns, pod), 0.0) for ns, pod, _ in owners) * 1024))
        values = {"DCGM_FI_DEV_GPU_UTIL": 0, "DCGM_FI_DEV_FB_FREE": total - reserved - used,
                  "DCGM_FI_DEV_FB_USED": used, "DCGM_FI_DEV_FB_RESERVED": reserved}
        base = (f'gpu="{index}",UUID="{gpu_uuid(node_name, index)}",pci_bus_id="00000000:00:{0x1E + index:02X}.0",'
                f'device="nvidia{index}",modelName="{model}",Hostname="{hostname}",DCGM_FI_DRIVER_VERSION="{DRIVER}"')
        for name, value in values.items():
            if not owners:
                rows[name].append(f"{name}{{{base}}} {value}")
            for ns, pod, container in owners:
                rows[name].append(f'{name}{{{base},container="{container}",namespace="{ns}",pod="{pod}"}} {value}')
    out = []
    for name, text in _FAMILIES:
        out += [f"# HELP {name} {text}", f"# TYPE {name} gauge", *rows[name]]
    return "\n".join(out) + "\n"


class DcgmExporterRuntime:
    """Runs dcgm-exporter containers: a few start-up lines, Ready after the host engine starts, ``/metrics``."""

    def __init__(self, host: GpuHost) -> None:
        self.host = host

    def start(self, ctx: ContainerContext) -> ContainerRun:
        """One (re)start: the exporter reads the node it landed on at every scrape."""
        node = ctx.node["metadata"]["name"] if ctx.node.get("metadata") else ""
        hostname = str((ctx.pod.get("metadata") or {}).get("name", ""))
        version = IMAGE.split(":")[1]
        lines = [LogLine(0.0, f'time=2025-06-02T09:30:00Z level=INFO msg="Starting dcgm-exporter" Version={version}'),
                 LogLine(1.0, 'time=2025-06-02T09:30:01Z level=INFO msg="DCGM successfully initialized!"'),
                 LogLine(2.0, 'time=2025-06-02T09:30:02Z level=INFO msg="Kubernetes metrics collection enabled!"'),
                 LogLine(READY_AFTER, f'time=2025-06-02T09:30:06Z level=INFO msg="Starting webserver" address=:{PORT}')]

        def http(path: str) -> HttpReply:
            route = path.split("?", 1)[0].rstrip("/") or "/"
            if route == "/health":
                return 200, "text/plain; charset=utf-8", b"OK"
            if route == "/metrics":
                return 200, _METRICS, exposition(self.host, node, hostname).encode()
            return 404, "text/plain; charset=utf-8", b"404 page not found\n"

        return ContainerRun(log=lines, ready_after=READY_AFTER, http=http)

