"""The GPU catalog (``data/gpus.yaml``): each card as torch sees it, and the node label values that name it.

Why apart from the model catalog: a card is looked up by the label a node or policy carries (with GFD's ``-SHARED``
and MIG suffixes), never from a config.json; the memory model only reads the spec it returns.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache, cached_property

from vllm_remedy.errors import UserError
from vllm_remedy.vllm.catalog_data import load

#: The compute capability of a card known only by its memory size (``--gpu-memory-gib``, a node labelled with memory
#: but no catalog product): rules read it as Ampere or newer (V1 runs), and the TP >= 2 non-torch term takes the
#: larger Hopper figure (less KV predicted).
UNKNOWN_CAPABILITY = "unknown"


@dataclass(frozen=True)
class GpuSpec:
    """One GPU as torch sees it: ``total_gib`` is the T in vLLM's ``T x gpu_memory_utilization``."""

    product: str
    total_gib: float
    compute_capability: str
    fp8: bool
    memory_mib: int
    # What one vLLM process holds on the card before loading weights (CUDA context), read from logs' "Free memory on
    # device (free/total) on startup" lines of TP-1 starts with no other process; None where none was read.
    context_gib: float | None = None

    @cached_property
    def capability(self) -> tuple[int, int] | None:
        """``compute_capability`` as (major, minor); None for ``UNKNOWN_CAPABILITY`` (or anything else unreadable),
        which each rule reads on its own safe side. Parsed once per spec: one estimate reads it ~19 times, and a plan
        makes up to ~1,400 estimates (bench/bench_plan.py: ~9 % of a cold plan's time, profiled)."""
        major, _, minor = self.compute_capability.partition(".")
        if not (major.isdigit() and (minor or "0").isdigit()):
            return None
        return int(major), int(minor or 0)

    def with_total(self, total_gib: float) -> GpuSpec:
        """The same card with a measured total (``--gpu-memory-gib``)."""
        return GpuSpec(self.product, float(total_gib), self.compute_capability, self.fp8, self.memory_mib,
                       self.context_gib)


@cache
def _gpu_index() -> dict[str, GpuSpec]:
    index: dict[str, GpuSpec] = {}
    for entry in load("gpus.yaml")["gpus"]:
        cc = str(entry["compute_capability"])
        major, minor = (int(p) for p in cc.split("."))
        spec = GpuSpec(
            product=entry["product"],
            total_gib=float(entry["total_gib"]),
            compute_capability=cc,
            fp8=(major, minor) >= (8, 9),
            memory_mib=int(entry["memory_mib"]),
            context_gib=float(entry["context_gib"]) if entry.get("context_gib") is not None else None,
        )
        for label in [entry["product"], *entry.get("labels", [])]:
            index[label.lower()] = spec
    return index


_MIG = re.compile(r"^(?P<parent>.+?)-mig-(?P<g>\d+)g\.(?P<gb>\d+)gb$")


def find_gpu(label: str) -> GpuSpec | None:
    """The GPU for a node label value (GFD product, with ``-SHARED`` / ``-MIG-1g.10gb``, GKE or Karpenter), or
    None when the catalog lacks it: a policy or affinity may name cards we do not know, which is a note there."""
    key = label.strip().lower()
    index = _gpu_index()
    if key.endswith("-shared"):  # time-sliced: same card, memory shared with other pods
        key = key[: -len("-shared")]
    if key in index:
        return index[key]
    mig = _MIG.match(key)
    if mig and mig.group("parent") in index:
        parent = index[mig.group("parent")]
        # A MIG slice exposes roughly its nominal GB; 0.93 GiB per GB keeps the estimate on the safe side.
        gib = round(int(mig.group("gb")) * 0.93, 2)
        return GpuSpec(f"{parent.product}-MIG-{mig.group('g')}g.{mig.group('gb')}gb", gib,
                       parent.compute_capability, parent.fp8, int(int(mig.group("gb")) * 1000), parent.context_gib)
    return None


def gpu(label: str) -> GpuSpec:
    """The GPU for a node label value, as :func:`find_gpu`; an unknown label is the user's to fix."""
    spec = find_gpu(label)
    if spec is None:
        raise UserError(f"unknown GPU label {label}; pass --gpu-memory-gib")
    return spec


def gpu_labels() -> list[str]:
    """Every label the catalog knows (for help texts and the planner's "bigger GPU" step)."""
    return sorted(_gpu_index())
