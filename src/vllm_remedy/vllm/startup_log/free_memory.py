"""What vLLM itself saw free on its GPU as it started: runbook step 3's "what else holds the GPU?" from the log.

V1 engines take a memory snapshot right after CUDA initialisation (``MemorySnapshot`` in ``init_device``) and
name its free and total bytes twice: in the refusal ``Free memory on device [cuda:N] (F/T GiB) on startup is less
than desired GPU memory utilization (U, R GiB)`` (0.9.1 on, the device named from ~0.14), and after a start that
passed in the advisory ``Free memory on device (F/T GiB) on startup. Desired GPU memory utilization is (U, R GiB).
Actual usage is …`` (0.10.2 on; DEBUG through 0.25.x, INFO from 0.26.0, gpu_worker.py@0.26.0). ``T - F`` is what was
in use on the card before vLLM loaded anything: other processes plus vLLM's own CUDA context (about 0.4-0.5 GiB per
rank, more with NCCL at TP >= 2), which is why ``held_gib`` is an upper bound on the foreign memory.

Pure: reads a ``StartupReport`` or the dict a fact carries (``StartupReport.to_dict()``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vllm_remedy.vllm.outcomes import Failure
from vllm_remedy.vllm.startup_log.report import StartupReport


@dataclass(frozen=True)
class StartupFree:
    """Free and total GPU memory (GiB, as torch counts them) at one vLLM start, from its own line."""

    free_gib: float
    total_gib: float
    utilization: float | None
    requested_gib: float | None
    device: str | None  # "cuda:1" when the line names it
    refused: bool  # True: the start failed the free-memory check; False: the start got past it

    @property
    def held_gib(self) -> float:
        """In use before vLLM allocated: other processes plus its own CUDA context."""
        return max(0.0, self.total_gib - self.free_gib)

    @property
    def short_gib(self) -> float | None:
        """How much more free memory the refused start needed (None when it was not refused)."""
        if not self.refused or self.requested_gib is None:
            return None
        return max(0.0, self.requested_gib - self.free_gib)

    def describe(self) -> str:
        """One line for a report: the device, what was free of what, what vLLM asked for."""
        where = self.device or "the GPU"
        asked = ""
        if self.requested_gib is not None and self.utilization is not None:
            asked = f"; it asks for {self.utilization:g} × {self.total_gib:.2f} = {self.requested_gib:.2f} GiB"
        verdict = f", {self.short_gib:.2f} GiB short" if self.short_gib is not None else ""
        return (f"{where} had {self.free_gib:.2f} of {self.total_gib:.2f} GiB free at startup: {self.held_gib:.2f} GiB "
                f"in use before vLLM loaded anything (its own CUDA context included){asked}{verdict}")


def _number(value: Any) -> float | None:
    try:
        return None if value is None else float(value)
    except (TypeError, ValueError):
        return None


def startup_free(report: StartupReport | Mapping[str, Any] | None) -> StartupFree | None:
    """The start's free-memory figures: from the refusal when the start failed that check, else from the advisory
    line of a start that passed it; None when the log printed neither (V0, before 0.9.1, or a truncated log)."""
    if report is None:
        return None
    data = report.to_dict() if isinstance(report, StartupReport) else report
    failure = str(data.get("failure") or "")
    detail = data.get("failure_detail") or {}
    if failure == Failure.FREE_MEMORY_BELOW_UTILIZATION.value:
        free, total = _number(detail.get("free_gib")), _number(detail.get("total_gpu_gib"))
        if free is not None and total is not None:
            device = detail.get("device")
            return StartupFree(free, total, _number(detail.get("gpu_memory_utilization")),
                               _number(detail.get("requested_gib")), str(device) if device else None, True)
    free, total = _number(data.get("free_at_start_gib")), _number(data.get("total_gpu_gib"))
    if free is None or total is None:
        return None
    utilization = _number(data.get("gpu_memory_utilization"))
    return StartupFree(free, total, utilization, total * utilization if utilization is not None else None, None, False)
