"""What a startup log showed of the KV cache, turned into the scale the planner puts on every candidate's KV.

A log can state the cache three ways: "GPU KV cache size: N tokens", "Available KV cache memory: X GiB" (a failing
V1 start prints it before its error), and the error's own "the estimated maximum model length is N". Each is turned
into KV bytes per GPU with the memory model's layout (groups, sliding windows, the release's max-length check), so a
hybrid model is not divided naively per token; the smallest wins. Compared with the estimator's KV at the settings
the log ran with, it gives one factor applied to every candidate — those that keep the budget and those that change
it (utilization, TP, GPU) — so no candidate at the logged budget asks for more than vLLM said it holds (a step
must hold at least ``limits.MIN_CONCURRENCY`` max-length requests of the scaled cache).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vllm_remedy.vllm.catalog import GIB, GpuSpec, ModelSpec
from vllm_remedy.vllm.memory import EngineSettings, estimate, resolve
from vllm_remedy.vllm.memory.kv_layout import check_rule
from vllm_remedy.vllm.memory.terms import kv_layout


@dataclass(frozen=True)
class KvObservation:
    """The KV cache one start logged (``None``: not printed) and the settings it ran with, when the log says."""

    tokens: int | None = None  # "GPU KV cache size"
    gib: float | None = None  # "Available KV cache memory" (or the max-length error's available memory)
    max_len: int | None = None  # "Based on the available memory, the estimated maximum model length is N"
    tp: int | None = None
    utilization: float | None = None

    @classmethod
    def from_report(cls, report: Mapping[str, Any]) -> KvObservation | None:
        """From a ``StartupReport.to_dict()`` (what the pods fact stores); None when the log sized no cache."""
        detail = report.get("failure_detail") or {}
        got = cls(tokens=_positive(report.get("kv_cache_tokens"), int),
                  gib=_positive(report.get("kv_cache_gib"), float),
                  max_len=_positive(detail.get("suggested_max_model_len"), int),
                  tp=_positive(report.get("tp_size"), int),
                  utilization=_positive(report.get("gpu_memory_utilization"), float))
        return got if got.tokens or got.gib or got.max_len else None

    def smallest(self, other: KvObservation | None) -> KvObservation:
        """Two containers' logs of the same revision: the smaller of each figure (the rank vLLM sizes by)."""
        if other is None:
            return self
        pick = {}
        for name in ("tokens", "gib", "max_len"):
            mine, theirs = getattr(self, name), getattr(other, name)
            pick[name] = min(v for v in (mine, theirs) if v is not None) if (mine or theirs) else None
        return dataclasses.replace(self, **pick)

    def describe(self) -> str:
        parts = []
        if self.tokens:
            parts.append(f"{self.tokens:,} KV tokens")
        if self.gib:
            parts.append(f"{self.gib:.2f} GiB of KV cache")
        if self.max_len:
            parts.append(f"an estimated maximum model length of {self.max_len:,}")
        return ", ".join(parts)


def _positive(value: Any, kind: type) -> Any:
    try:
        got = kind(value) if value is not None else None
    except (TypeError, ValueError):
        return None
    return got if got is not None and got > 0 else None


def kv_scale(obs: KvObservation, model: ModelSpec, gpu: GpuSpec, settings: EngineSettings) -> tuple[float, str | None]:
    """(factor, note): the observed KV bytes over the predicted ones at the settings the log ran with (``settings``
    with the log's TP and utilization when it printed them); 1.0 and no note when the log shows no less."""
    logged = _logged_settings(obs, settings)
    predicted = estimate(model, gpu, logged)
    if predicted.kv_cache_gib <= 0:
        return 1.0, None
    res = resolve(model, gpu, logged)
    layout = kv_layout(model, res)
    bytes_seen: list[float] = []
    if obs.gib:
        bytes_seen.append(obs.gib * GIB)
    if obs.max_len:  # the bytes vLLM's own check needs for that length: a lower bound of what it had
        bytes_seen.append(layout.needed_bytes(obs.max_len, res.mnbt, check_rule(res.rules.version)))
    scales = [b / (predicted.kv_cache_gib * GIB) for b in bytes_seen]
    if obs.tokens and predicted.kv_cache_tokens > 0:  # tokens: blocks shared out among the groups, as predicted
        scales.append(obs.tokens / predicted.kv_cache_tokens)
    if not scales or min(scales) >= 1.0:
        return 1.0, None
    scale = min(scales)
    if not bytes_seen:  # the wording plans have always carried for a "GPU KV cache size" line alone
        return scale, (f"the log shows {obs.tokens:,} KV tokens, {predicted.kv_cache_tokens:,} predicted: "
                       f"concurrency targets are scaled by {scale:.3f}")
    return scale, (f"the log shows {obs.describe()} ({scale * predicted.kv_cache_gib:.2f} GiB per GPU), "
                   f"{predicted.kv_cache_gib:.2f} GiB predicted at the same settings: every candidate's KV cache is "
                   f"scaled by {scale:.3f}")


def kv_deficit_gib(obs: KvObservation, model: ModelSpec, gpu: GpuSpec, settings: EngineSettings,
                   scale: float) -> float:
    """GiB per GPU the logged cache fell short of the prediction at the log's own settings (0 when it did not).

    vLLM's KV budget is utilization x total less the non-KV memory it measured, and that measurement does not
    shrink with utilization: a candidate that lowers utilization (or has less KV for any reason) loses these GiB,
    not the same share. The judge takes the smaller of the two readings for every candidate."""
    if scale >= 1.0:
        return 0.0
    return estimate(model, gpu, _logged_settings(obs, settings)).kv_cache_gib * (1.0 - scale)


def _logged_settings(obs: KvObservation, settings: EngineSettings) -> EngineSettings:
    """``settings`` at the TP and utilization the log ran with, where it printed them."""
    return dataclasses.replace(settings, tp=obs.tp or settings.tp,
                               gpu_memory_utilization=obs.utilization or settings.gpu_memory_utilization)
