"""GPU memory on the nodes an ``@k8s`` host's pods run on, from NVIDIA's DCGM exporter (read through pods/proxy).

Step 3 of the runbook asks what else holds the GPU; ``nvidia-smi`` on the node needs a debug pod, while the GPU
operator already runs a DCGM exporter on every GPU node. Per node this fact says either what each GPU holds
(used/free/reserved MiB and the pods the exporter maps to it) or, in one sentence, why that is unknown: no
exporter there, RBAC refuses the proxy, the exporter did not answer, or its text did not parse.

    pyinfra inventories/local.py fact vllm_remedy.facts.gpu_memory.GpuMemory
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vllm_remedy.facts.base import JsonFact
from vllm_remedy.kube.dcgm import EXPORTER_SELECTOR, FB_FREE, FB_USED, framebuffers


def _unknown(node: str, row: Mapping[str, Any]) -> str:
    exporter = row.get("exporter")
    error = str(row.get("error") or "")
    if not exporter:
        if row.get("missing"):
            return f"no DCGM exporter on node {node} (no pod labelled {EXPORTER_SELECTOR} there)"
        return f"cannot list DCGM exporter pods ({error})"
    if row.get("status") == 403:
        return f"reading DCGM exporter {exporter} through pods/proxy is forbidden ({error})"
    return f"DCGM exporter {exporter} did not answer through pods/proxy ({error})"


def node_memory(node: str, row: Mapping[str, Any]) -> dict[str, Any]:
    """One node's GPUs as plain data, or ``unknown`` with the reason (pure)."""
    out: dict[str, Any] = {"node": node, "exporter": row.get("exporter"), "gpus": [], "unknown": None}
    if "text" not in row:
        out["unknown"] = _unknown(node, row)
        return out
    try:
        gpus = framebuffers(str(row["text"]))
    except ValueError as exc:
        out["unknown"] = f"DCGM exporter {row.get('exporter')}: its metrics do not parse ({exc})"
        return out
    if not gpus:
        out["unknown"] = f"DCGM exporter {row.get('exporter')} reports no {FB_USED}/{FB_FREE} samples"
        return out
    out["gpus"] = [{"gpu": g.gpu, "uuid": g.uuid, "model": g.model, "hostname": g.hostname, "used_mib": g.used_mib,
                    "free_mib": g.free_mib, "reserved_mib": g.reserved_mib, "total_mib": g.total_mib,
                    "pods": [{"namespace": ns, "pod": pod, "container": c} for ns, pod, c in g.pods]} for g in gpus]
    return out


class GpuMemory(JsonFact[dict[str, Any]]):
    """``nodes``: node name → {exporter, gpus [{gpu, uuid, model, used/free/reserved/total MiB, pods}], unknown};
    ``pods``: the Deployment's pods → {stopped}: its vLLM container ran at no moment of the scrape."""

    def command(self) -> str:
        return "k8s-gpu-metrics"

    def build(self, document: dict[str, Any]) -> dict[str, Any]:
        nodes = document.get("nodes") or {}
        pods = {str(name): {"stopped": bool((row or {}).get("stopped"))}
                for name, row in sorted((document.get("pods") or {}).items())}
        return {"nodes": {str(name): node_memory(str(name), row or {}) for name, row in sorted(nodes.items())},
                "pods": pods}
