"""The planner's notes on what it could not offer: why a lever is absent, why no TP size is offered, and the fp8 KV
cache a ``--kv-cache-dtype auto`` runs where the policy forbids it.

Moved out of ``planner`` (which builds the base and the steps): the notes read the request, the limits and the rungs
found, and decide nothing the plan's steps depend on.
"""

from __future__ import annotations

from vllm_remedy.remedies.budget.ladder import Rung
from vllm_remedy.remedies.budget.levers import tp_sizes
from vllm_remedy.remedies.budget.limits import Limits
from vllm_remedy.remedies.budget.request import BudgetRequest
from vllm_remedy.vllm import catalog, kv_auto, kv_auto_fix
from vllm_remedy.vllm.memory import EngineSettings
from vllm_remedy.vllm.memory.capture import capture_flag, v0_size_flags
from vllm_remedy.vllm.memory.settings import engine_rules, split_run, tp_split_problem
from vllm_remedy.vllm.versions import rules


def auto_fp8(req: BudgetRequest, s: EngineSettings) -> tuple[str, str | None] | None:
    """(the problem, the typed 16-bit dtype that fixes it or None) when ``--kv-cache-dtype auto`` runs an fp8 cache
    because the checkpoint's ModelOpt KV scheme (vLLM 0.14.0+) or compressed-tensors kv_cache_scheme (0.15.0+) says so
    (``kv_auto``); None otherwise. Without a fix the problem names the policy keys to change (no flag clears it)."""
    v = rules(s.version).version
    if s.kv_cache_dtype != "auto" or kv_auto.note(s.kv_cache_dtype, req.model.kv_quant, v) is None:
        return None
    typed = kv_auto_fix.sixteen_bit_for(req.model, s.dtype, req.gpu.capability, s.version)
    choices = req.policy.flags.kv_cache_dtype if req.policy is not None else None
    fix = None if typed is not None and choices is not None and typed not in choices.allowed else typed
    said = ("kv-cache-dtype auto runs fp8_e4m3 on this checkpoint (its ModelOpt KV-cache scheme is FP8, vLLM "
            "0.14.0+), which the policy does not allow" if req.model.kv_quant not in (kv_auto.CT_FP8, kv_auto.CT_OTHER)
            else "kv-cache-dtype auto runs fp8 on this checkpoint (its compressed-tensors kv_cache_scheme, vLLM "
            "0.15.0+), which the policy does not allow")
    if fix:
        return said, fix
    edit = f"allow {typed} in the policy's flags.kv-cache-dtype.allowed, or " if typed else ""
    return (f"{said}; no --kv-cache-dtype this release and policy accept keeps a 16-bit cache: {edit}allow an fp8 KV "
            "cache (kv_cache_fp8) after an evaluation"), None


def auto_fp8_blocked(req: BudgetRequest, s: EngineSettings) -> str | None:
    """Why no step is offered when ``auto`` runs an fp8 cache the policy forbids and no flag within it clears that
    (None: none runs, or a typed 16-bit dtype fixes it): every rung keeps the cache, the unchanged unit too, which
    ``check`` would otherwise quote as the fix for the violation it reports. The problem names the policy edit."""
    if req.policy is None or req.policy.kv_cache_fp8.allowed or (auto := auto_fp8(req, s)) is None or auto[1]:
        return None
    return ("no change within the policy clears the fp8 KV cache --kv-cache-dtype auto runs on this checkpoint: "
            "the policy must change (its keys are named in the problem)")


def tp_refusals(req: BudgetRequest, lo: int, hi: int) -> str:
    """Why no TP size from ``lo`` to ``hi`` is offered: the heads sentence when heads or KV heads ruled every size out,
    otherwise each size's refusal in ``tp_split_problem``'s words (the intermediate width, a quantization group split
    across GPUs), so the note names the rule that dropped it."""
    run = split_run(req.model, req.gpu, req.settings)
    reasons = [r for t in range(lo, hi + 1) if (r := tp_split_problem(req.model, t, run))]
    heads = f"{req.model.num_heads} attention / {req.model.num_kv_heads} KV heads"
    others = [r for r in reasons if " attention heads" not in r and " KV heads " not in r]
    if not others:
        return f"no size from {lo} to {hi} GPUs divides {heads}"
    return "; ".join(others) + (f"; no other size from {lo} to {hi} GPUs divides {heads}"
                                if len(others) < len(reasons) else "")


def lever_notes(req: BudgetRequest, lim: Limits, rungs: list[Rung], graphs: bool) -> list[str]:
    """Why a lever is absent when it was never allowed to appear (not when a smaller rung beat it)."""
    out = []
    if lim.fp8_why_not and not req.settings.kv_cache_dtype.startswith("fp8") and auto_fp8(req, req.settings) is None:
        out.append(f"kv-cache-dtype fp8 not offered: {lim.fp8_why_not}")
    if not tp_sizes(req.model, max(req.settings.tp + 1, lim.tp_min), lim.tp_lever_max, req.gpu, req.settings):
        if lim.gpus_per_pod is not None and lim.gpus_per_pod <= req.settings.tp and lim.gpus_per_pod < lim.tp_max:
            held = min(req.settings.tp, lim.gpus_per_pod * max(req.engine_pods, 1))  # the size ``_base`` held it to
            out.append(f"tensor-parallel-size above {held} not offered: the policy pins "
                       f"{lim.gpus_per_pod} GPU(s) per pod (gpu.per_pod)")
        elif lim.tp_lever_max <= req.settings.tp:  # the bound itself, not the heads, rules it out
            out.append(f"tensor-parallel-size above {req.settings.tp} not offered: at most {lim.tp_max} GPU(s) per "
                       "pod (policy flags.tensor-parallel-size.max, or the GPUs of the largest node)")
        else:
            out.append(f"tensor-parallel-size above {req.settings.tp} not offered: "
                       + tp_refusals(req, max(req.settings.tp + 1, lim.tp_min), lim.tp_lever_max))
    unknown = [p for p in lim.products if catalog.find_gpu(p) is None]
    if unknown:
        out.append(f"policy GPU products not in the catalog (skipped): {', '.join(unknown)}")
    if req.gpu_label is None and lim.products and req.gpu.product not in lim.products:
        out.append(f"the policy pins {', '.join(lim.products)}; pin the GPU so scheduling cannot pick a smaller card")
    if any(r.lever == "kv-cache-pin" for r in rungs):
        out.append(f"the pinned KV cache starts but falls short of the policy's concurrency ({lim.required:.2f}x "
                   f"required): removing its flag is offered as a step, predicted on the --gpu-memory-utilization "
                   f"budget like every step (the budget's levers then move the cache again)")
    eager = [r for r in rungs if r.lever == "enforce-eager"]
    if eager and len(eager) == len(rungs):
        out.append("--enforce-eager is the only change predicted to fit: it costs throughput and latency; "
                   "plan a real fix (bigger GPU, TP, shorter max-model-len bounds) before it expires")
    elif eager:
        out.append("--enforce-eager is offered as a stopgap for the CUDA-graph capture OOM: it costs throughput "
                   "and latency; apply one of the lasting steps above before it expires")
    run = engine_rules(req.settings, req.gpu, req.model)[0]  # V0 where the release or its oracle runs it
    offered = any(r.lever == "cudagraph-capture-size" for r in rungs)
    if graphs and run.engine == "V0" and not offered:  # its lever is --max-num-seqs (``levers.capture_size``)
        out.append(f"no capture-size step: {v0_size_flags(run)}; no smaller --max-num-seqs within the policy is "
                   "predicted to fit on its own")
    elif graphs and run.engine == "V0":
        out.append(f"capture-size step: {v0_size_flags(run)}")
    elif graphs and capture_flag(run) is None:
        out.append(f"no capture-size step: vLLM {run.label} sets the CUDA-graph sizes only "
                   "through --compilation-config (cudagraph_capture_sizes), which the planner does not write")
    elif graphs and not offered:
        out.append("no capture-size step: no smaller CUDA-graph capture size is predicted to fit on its own")
    return out
