"""Runbook step 3, "what else holds the GPU?": memory on the pod's node that the vLLM pod does not account for.

Two witnesses, both read-only. vLLM's own startup line (``vllm.startup_log.free_memory``) says what was in use on
its device the moment it started. The DCGM exporter (``facts.gpu_memory``) says what every GPU of the node holds
now and which pod the device plugin gave it to. The exporter's value is the whole device's, so memory counts as
the vLLM pod's only while that pod's vLLM container runs; on its GPU between crashes, on a GPU given to another
pod, or on a GPU given to no pod, it is held outside the pod. "none" is said only when the exporter was read and
showed nothing of the kind and no vLLM container of ours was running on a busy GPU (beside a running vLLM the
device's memory cannot be split); otherwise the report says in one line what is unknown and why.

Pure: the Pods and GpuMemory facts' plain data in, report lines out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vllm_remedy.vllm.startup_log.free_memory import startup_free

#: Used MiB at or below which a GPU counts as idle (an idle card reports 0-a few MiB once the driver reserve is
#: kept out of "used"; a CUDA context alone is 300-500 MiB).
IDLE_MIB = 256.0
MIB_PER_GIB = 1024.0


@dataclass(frozen=True)
class Held:
    """Memory on one GPU that the vLLM pod does not account for, and who holds it as far as is known."""

    gpu: str
    uuid: str
    model: str
    mib: float
    holder: str

    def describe(self) -> str:
        """``8.00 GiB on GPU 0 (GPU-…, NVIDIA L4), <holder>``."""
        ident = ", ".join(x for x in (self.uuid, self.model) if x)
        return f"{self.mib / MIB_PER_GIB:.2f} GiB on GPU {self.gpu}{f' ({ident})' if ident else ''}, {self.holder}"


def _mapped(gpu: Mapping[str, Any]) -> list[str]:
    return [f"{p.get('namespace')}/{p.get('pod')}" + (f"/{p['container']}" if p.get("container") else "")
            for p in gpu.get("pods") or []]


def foreign(node: Mapping[str, Any], ours: Mapping[str, Any], namespace: str) -> list[Held]:
    """Per GPU of one node (a ``GpuMemory`` row), the memory held outside the Deployment's vLLM pods. ``ours`` is
    the fact's ``pods``: name → {stopped}, stopped meaning the vLLM container ran at no moment of the scrape."""
    out = []
    for gpu in node.get("gpus") or []:
        used = float(gpu.get("used_mib") or 0.0)
        if used <= IDLE_MIB:
            continue
        mapped = gpu.get("pods") or []
        mine = [p for p in mapped if p.get("namespace") == namespace and p.get("pod") in ours]
        if any(not (ours[p["pod"]] or {}).get("stopped") for p in mine):
            continue  # the exporter cannot split a device; a vLLM pod that may have run is taken to hold its GPU
        if mine:
            holder = (f"mapped to {', '.join(_mapped(gpu))} whose vLLM container is not running: a process outside "
                      "the pod holds it (outside Kubernetes, or a container that bypasses the device plugin)")
        elif mapped:
            holder = f"held by {', '.join(_mapped(gpu))}"
        else:
            holder = "mapped to no pod: a process outside Kubernetes, or a container that bypasses the device plugin"
        out.append(Held(str(gpu.get("gpu")), str(gpu.get("uuid") or ""), str(gpu.get("model") or ""), used, holder))
    return out


def shared(node: Mapping[str, Any], ours: Mapping[str, Any], namespace: str) -> list[str]:
    """GPUs where one of our vLLM containers may have run during the scrape: what else they hold is unknown, since
    the exporter reports the whole device (a review saw 8 GiB held beside a running vLLM reported as "none")."""
    out = []
    for gpu in node.get("gpus") or []:
        mine = [p for p in gpu.get("pods") or [] if p.get("namespace") == namespace and p.get("pod") in ours]
        if float(gpu.get("used_mib") or 0.0) > IDLE_MIB and any(not (ours[p["pod"]] or {}).get("stopped")
                                                                for p in mine):
            out.append(str(gpu.get("gpu")))
    return out


def gpu_table(node: Mapping[str, Any]) -> list[str]:
    """One line per GPU as the exporter reports it: used/free/total MiB and the pods mapped to it."""
    out = []
    for gpu in node.get("gpus") or []:
        mapped = _mapped(gpu)
        out.append(f"GPU {gpu.get('gpu')} {gpu.get('uuid') or ''} ({gpu.get('model') or 'unknown model'}): used "
                   f"{gpu['used_mib']:,.0f} / free {gpu['free_mib']:,.0f} / total {gpu['total_mib']:,.0f} MiB; "
                   f"mapped to {', '.join(mapped) or 'no pod'}")
    return out


def startup_lines(pod: Mapping[str, Any], container: str | None = None) -> list[str]:
    """vLLM's own free-memory line for each of the pod's containers whose log was read."""
    out = []
    for c in pod.get("containers") or []:
        if container is not None and c.get("name") != container:
            continue
        startup = c.get("startup") or {}
        free = startup_free(startup.get("report"))
        if free is not None:
            which = "previous" if startup.get("previous") else "current"
            out.append(f"vLLM's own line ({pod['name']}/{c['name']}, {which} log): {free.describe()}")
    return out


def consumers(node_name: str, others: list[str], memory: Mapping[str, Any] | None,
              namespace: str) -> tuple[str, list[str]]:
    """(the "other GPU consumers: …" text, detail lines) for one node: other pods requesting GPUs there plus
    memory the exporter shows held outside the pod; "none" only when the exporter was read and both are empty."""
    row = ((memory or {}).get("nodes") or {}).get(node_name)
    if memory is None:
        why = "GPU memory was not read"
    elif row is None:
        why = f"no GPU memory reading for node {node_name}"
    else:
        why = row.get("unknown")
    if why:
        known = ", ".join(others) if others else "no other pod requests a GPU here"
        return f"{known}; memory held outside the pod: unknown — {why}", []
    ours = (memory or {}).get("pods") or {}
    held = foreign(row, ours, namespace)
    busy = shared(row, ours, namespace)
    parts = others + [f"{h.describe()}" for h in held]
    if busy:
        parts = (parts or ["no other pod requests a GPU here"]) + [
            f"memory beside vLLM's own on GPU {', '.join(busy)}: unknown while vLLM runs there (the exporter reports "
            "the whole device; vLLM's own free-memory line, when it logs one, says what was in use before it loaded)"]
    return ("; ".join(parts) or "none"), gpu_table(row)
