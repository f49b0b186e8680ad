"""The startup lines of vLLM 0.19-0.34 that follow the KV-cache sizing: auto-fit, the post-start advisory, and
0.34's extensible KV cache (sized after warmup and CUDA-graph capture).

Figures vLLM measures and the memory model does not (free memory after warmup, torch's reservation growth) are
derived from the model's terms so that the lines read back consistently; they are constructed, not measured.
Release facts come from ``versions.rules`` (``kv_sized_after_warmup``), never from a version compare here.
"""

from __future__ import annotations

from typing import Any, Protocol

from vllm_remedy.vllm.log_formats import Template, templates_for
from vllm_remedy.vllm.versions import rules

_GIB = 1 << 30
_REDUNDANCY_GIB = 150 / 1024  # the advisory keeps 150 MiB back (gpu_worker.py@0.26.0-@0.34.0)


class Writer(Protocol):
    """What these helpers need of ``writer.Writer``."""

    v: tuple[int, int, int]
    engine: str
    runner: str
    tp: int

    def template(self, role: str, tpl: Template, values: dict[str, Any], *, ranks: bool = False) -> None: ...


def extensible(version: str) -> bool:
    """The release sizes the KV cache after warmup and capture (0.34's extensible KV cache)."""
    return rules(version).kv_sized_after_warmup


def free_memory_check(version: str) -> bool:
    """The release refuses a start whose free memory is below the budget (not 0.34 with its extensible cache)."""
    return rules(version).free_memory_check


def add_figures(figures: dict[str, Any], *, free_at_start_gib: float | None) -> None:
    """The advisory's and 0.34's extra figures, from the ones the memory model gives."""
    weights, act, non_torch = figures["weights_gib"], figures["activation_gib"], figures["non_torch_gib"]
    graphs, kv, requested = figures["cudagraph_gib"], figures["kv_cache_gib"], figures["requested_gib"]
    free = free_at_start_gib if free_at_start_gib is not None else figures["total_gpu_gib"] - 0.45
    used = weights + non_torch + act + graphs + _REDUNDANCY_GIB
    figures.update(
        free_gib=free, kv_device="GPU", consumed_gib=weights + non_torch, peak_activation_gib=act,
        fit_bytes=int((requested - used) * _GIB), fit_gib=requested - used,
        full_bytes=int((free - used) * _GIB), full_gib=free - used, kv_in_use_gib=kv,
        # 0.34: the reserved capacity is the budget before warmup and graphs took theirs.
        kv_capacity_gib=max(kv, requested - weights - act - non_torch),
        after_warmup_free_gib=max(0.0, free - weights - non_torch - graphs - 0.05), committed_gib=0.05,
        transient_gib=act, transient_peak_gib=act, torch_growth_gib=act / 4, final_blocks=figures["gpu_blocks"],
        final_kv_gib=kv, final_requested_gib=requested, torch_limit_gib=weights + act + graphs,
        extended_kv_gib=kv)


def kv_hint(utilization: float) -> str:
    """0.34's advice in the KV errors, sized at the reserved capacity (kv_cache_planning.py@0.34.0)."""
    if utilization < 1.0:
        return ("The KV cache gets what is left after the model and its activations within "
                f"`gpu_memory_utilization`={utilization}; increase it (with the extensible KV cache it defaults to "
                "1.0) or decrease `max_model_len` or `max_num_seqs`.")
    return ("The extensible KV cache already takes all device memory left after the model and its activations; "
            "decrease `max_model_len` or `max_num_seqs`, or the model needs a device with more memory.")


def _emit(w: Writer, kind: str, values: dict[str, Any], *, ranks: bool = False) -> None:
    for tpl in templates_for(kind, w.v, w.engine, w.runner):
        w.template("engine", tpl, values, ranks=ranks and w.tp > 1)


def auto_fit(w: Writer, figures: dict[str, Any], derived: int | None, tentative: bool, kind: str = "auto_fit") -> None:
    """--max-model-len auto: the length fitted to the KV memory (at 0.34 to the reserved capacity, tentatively, then
    kept after warmup: ``kind="auto_fit_final"``)."""
    fitted = int(figures["concurrency_max_len"])
    full = derived if derived is not None else fitted
    values = {**figures, "auto_fit_from": full, "auto_fit_max_model_len": fitted,
              "auto_fit_kv_gib": figures["kv_capacity_gib" if tentative else "kv_cache_gib"]}
    tpls = [t for t in templates_for(kind, w.v, w.engine, w.runner)
            if kind == "auto_fit_final" or ("auto_fit_from" in t.text) == (full > fitted)]
    if tpls:
        w.template("engine", tpls[-1], values)


def kv_lines(w: Writer, figures: dict[str, Any], *, refit: bool = False) -> None:
    """0.34: measured after warmup and capture, the size logged by the engine (after auto-fit's second pass), then
    committed by every worker."""
    _emit(w, "warmup_memory", figures, ranks=True)
    if refit:
        auto_fit(w, figures, None, False, kind="auto_fit_final")
    _emit(w, "tokens", figures)
    _emit(w, "kv_extended", figures, ranks=True)


def advisory(w: Writer, figures: dict[str, Any], *, capacity: bool) -> None:
    """The post-start advisory (INFO from 0.26.0); at 0.34 its "in use" is the reserved capacity."""
    values = {**figures, "kv_in_use_gib": figures["kv_capacity_gib"]} if capacity else figures
    _emit(w, "advisory", values, ranks=True)
