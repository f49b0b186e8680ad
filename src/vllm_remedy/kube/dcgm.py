"""GPU framebuffer memory as NVIDIA's DCGM exporter reports it, read from its Prometheus text exposition.

The exporter (a DaemonSet of the GPU operator: namespace ``gpu-operator``, label ``app=nvidia-dcgm-exporter``, port
9400) prints one sample per GPU of ``DCGM_FI_DEV_FB_USED`` / ``DCGM_FI_DEV_FB_FREE`` (and, with newer DCGM,
``DCGM_FI_DEV_FB_RESERVED``), in MiB, labelled ``gpu`` (index), ``UUID`` (``uuid`` with --use-old-namespace),
``modelName``, ``Hostname`` (``hostname`` from May 2026). With its Kubernetes pod mapping on, the GPU a pod was
allocated carries ``pod``/``namespace``/``container`` (``pod_name``/``pod_namespace``/``container_name`` in the
old namespace) — one sample per pod sharing it — and an unallocated GPU keeps the bare sample. The value is the
whole device's: the exporter cannot split one GPU's memory between the processes on it.

Pure: text in, ``GpuFramebuffer`` rows out; malformed text raises ``ValueError`` with the line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

EXPORTER_NAMESPACE = "gpu-operator"
EXPORTER_SELECTOR = "app=nvidia-dcgm-exporter"
EXPORTER_PORT = 9400
FB_USED, FB_FREE, FB_RESERVED = "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_FB_RESERVED"
_FB = (FB_USED, FB_FREE, FB_RESERVED)
_POD_LABELS = (("namespace", "pod", "container"), ("pod_namespace", "pod_name", "container_name"))

_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
_SAMPLE = re.compile(rf"^(?P<name>{_NAME})(?:\{{(?P<labels>.*)\}})?\s+(?P<value>\S+)(?:\s+-?\d+)?\s*$")
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*(?:,|$)')


@dataclass(frozen=True)
class GpuFramebuffer:
    """One GPU's memory (MiB) and the pods the exporter maps to it (``namespace/pod/container``)."""

    gpu: str
    uuid: str
    model: str
    hostname: str
    used_mib: float
    free_mib: float
    reserved_mib: float | None = None
    pods: tuple[tuple[str, str, str], ...] = field(default_factory=tuple)

    @property
    def total_mib(self) -> float:
        """The card's memory: used + free (+ reserved, which newer drivers keep out of both)."""
        return self.used_mib + self.free_mib + (self.reserved_mib or 0.0)


def _labels(text: str, line: str) -> dict[str, str]:
    out: dict[str, str] = {}
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _LABEL.match(text, pos)
        if m is None:
            raise ValueError(f"malformed labels in {line!r}")
        out[m.group(1)] = re.sub(r"\\(.)", lambda e: "\n" if e.group(1) == "n" else e.group(1), m.group(2))
        pos = m.end()
    return out


def _value(text: str, line: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"not a number in {line!r}") from None


def framebuffers(text: str) -> list[GpuFramebuffer]:
    """Every GPU with both FB_USED and FB_FREE, in exposition order; ``ValueError`` on a malformed sample line.

    An exporter without the framebuffer fields (a custom counters file) yields no rows, not an error.
    """
    rows: dict[str, dict[str, object]] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if m is None:
            raise ValueError(f"not a Prometheus sample: {line[:200]!r}")
        if m.group("name") not in _FB:
            continue
        labels = _labels(m.group("labels") or "", line[:200])
        uuid = labels.get("UUID") or labels.get("uuid") or ""
        key = uuid or f"{labels.get('Hostname') or labels.get('hostname')}/{labels.get('gpu')}"
        row = rows.setdefault(key, {"gpu": labels.get("gpu", "?"), "uuid": uuid, "model": labels.get("modelName", ""),
                                    "hostname": labels.get("Hostname") or labels.get("hostname") or "",
                                    "pods": []})
        row[m.group("name")] = _value(m.group("value"), line[:200])
        for ns_key, pod_key, container_key in _POD_LABELS:
            if labels.get(pod_key):
                owner = (labels.get(ns_key, ""), labels[pod_key], labels.get(container_key, ""))
                pods = row["pods"]
                assert isinstance(pods, list)
                if owner not in pods:
                    pods.append(owner)
    out = []
    for row in rows.values():
        if FB_USED not in row or FB_FREE not in row:
            continue
        reserved = row.get(FB_RESERVED)
        out.append(GpuFramebuffer(
            gpu=str(row["gpu"]), uuid=str(row["uuid"]), model=str(row["model"]), hostname=str(row["hostname"]),
            used_mib=float(row[FB_USED]), free_mib=float(row[FB_FREE]),  # type: ignore[arg-type]
            reserved_mib=float(reserved) if reserved is not None else None,  # type: ignore[arg-type]
            pods=tuple(row["pods"])))  # type: ignore[arg-type]
    return out
