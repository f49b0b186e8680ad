"""vLLM's Prometheus exposition, with the metric names and labels each release uses.

Names read from the releases' source (``engine/metrics.py`` for V0, ``v1/metrics/loggers.py``):
- V0 engine: ``vllm:gpu_cache_usage_perc``, ``vllm:gpu_prefix_cache_hit_rate``, counter
  ``vllm:num_preemptions_total``; label ``model_name``.
- V1 0.8.0-0.8.2: ``vllm:gpu_cache_usage_perc``, ``vllm:num_preemptions_total``; label ``model_name``.
- V1 0.8.3-0.9.1: the same plus label ``engine="0"``.
- V1 0.9.2-0.10.x: ``vllm:kv_cache_usage_perc`` added, ``vllm:gpu_cache_usage_perc`` still exported
  (deprecated); from 0.11.0 only behind --show-hidden-metrics-for-version, gone in 0.12.
A counter is exposed with its ``_total`` suffix whatever name it was registered under (prometheus_client),
so alerts written for any release keep matching ``vllm:num_preemptions_total``.
"""

from __future__ import annotations

from dataclasses import dataclass

from vllm_remedy.sim.load import LoadState

Version = tuple[int, int, int]


@dataclass(frozen=True)
class Sample:
    """One gauge or counter family with its single sample: enough for the HELP/TYPE/value lines that
    dashboards and the runbook's KV-usage and preemption checks scrape."""

    name: str
    kind: str  # gauge | counter
    help: str
    value: float


def families(version: Version, engine: str, st: LoadState, preemptions: float, prefix_hit: float) -> list[Sample]:
    """The metric families this release exports, in its order, with the load model's values."""
    out = [Sample("vllm:num_requests_running", "gauge", "Requests in the running batch.", float(st.running)),
           Sample("vllm:num_requests_waiting", "gauge", "Requests queued for scheduling.", float(st.waiting))]
    v1 = engine == "v1"
    if not v1 or version < (0, 11, 0):
        out.append(Sample("vllm:gpu_cache_usage_perc", "gauge", "GPU KV-cache usage (1 = full).", st.kv_usage))
    if v1 and version >= (0, 9, 2):
        out.append(Sample("vllm:kv_cache_usage_perc", "gauge", "KV-cache usage (1 = full).", st.kv_usage))
    if not v1:
        out.append(Sample("vllm:gpu_prefix_cache_hit_rate", "gauge", "GPU prefix-cache block hit rate.",
                          prefix_hit))
    out.append(Sample("vllm:num_preemptions_total", "counter", "Preemptions since the engine started.",
                      float(int(preemptions))))
    return out


def exposition(version: Version, engine: str, model_name: str, st: LoadState, preemptions: float,
               prefix_hit: float) -> str:
    """Prometheus text format 0.0.4, as vLLM's /metrics serves it."""
    labels = {"model_name": model_name}
    if engine == "v1" and version >= (0, 8, 3):
        labels["engine"] = "0"
    rendered = ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items())
    lines: list[str] = []
    for sample in families(version, engine, st, preemptions, prefix_hit):
        lines += [f"# HELP {sample.name} {sample.help}", f"# TYPE {sample.name} {sample.kind}",
                  f"{sample.name}{{{rendered}}} {_number(sample.value)}"]
    return "\n".join(lines) + "\n"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _number(value: float) -> str:
    """prometheus_client's float formatting: repr, with 1.0 rather than 1."""
    return repr(float(value))
