"""Predict what vLLM does at startup on a GPU: memory split, KV cache tokens, concurrency, outcome.

Examples:
  vllm-remedy estimate --model meta-llama/Llama-3.1-8B-Instruct --gpu NVIDIA-L4 --max-model-len 16384
  vllm-remedy estimate --model-config config.json --gpu-memory-gib 44.4 --vllm-version 0.8.5 -o json
"""

from __future__ import annotations

import argparse

from vllm_remedy.commands import _hf_flags
from vllm_remedy.commands._engine_args import (
    add_engine_flags,
    add_model_gpu,
    add_output,
    check_int32,
    engine_flags,
    load_configured,
    load_gpu,
    model_inputs,
    refusable_settings,
    refused_estimate,
)
from vllm_remedy.envelope import dumps, envelope
from vllm_remedy.vllm import kv_auto, model_len, outcomes
from vllm_remedy.vllm.memory import Estimate, estimate
from vllm_remedy.vllm.memory.post_capture import CaptureRoom, capture_room
from vllm_remedy.vllm.memory.settings import engine_rules
from vllm_remedy.vllm.outcomes import Outcome
from vllm_remedy.vllm.versions import rules

NAME = "estimate"
ORDER = 40
HELP = "predict vLLM's startup memory split, KV cache and outcome for a model on a GPU"
BAR_WIDTH = 60
# Starts vLLM refuses at config time, and the figures such a start never has: shared with check, drift and plan.
REFUSED_BEFORE_SIZING, SIZING_KEYS = outcomes.REFUSED_BEFORE_SIZING, outcomes.SIZING_KEYS


def configure(parser: argparse.ArgumentParser) -> None:
    add_model_gpu(parser)
    add_engine_flags(parser)
    add_output(parser)


def run(args: argparse.Namespace) -> int:
    flags = engine_flags(args)
    model, source = load_configured(args, flags, args.vllm_version)  # --hf-config-path, --hf-overrides applied
    gpu = load_gpu(args)
    # a literal vLLM's config classes refuse (--max-num-seqs 0 from 0.12, an unknown --quantization from 0.13) is a
    # predicted config_refused start in check's words, not bad input: the rest is sized without it
    settings, refused, _ = refusable_settings(flags, args.vllm_version, model_inputs(args))
    check_int32(settings, flags)
    est = estimate(model, gpu, settings)
    if refused is not None:
        est = refused_estimate(est, refused, settings)
    r = rules(args.vllm_version)
    engine = engine_rules(settings, gpu, model)[0].engine  # V0 where VLLM_USE_V1=0 (or a fallback) selects it
    refusal = est.refusal  # config_refused: vLLM's words, as the estimate decided it (``memory.core``); else None
    label = r.label if engine == r.engine else f"{r.label}, {engine} engine"
    longest = model_len.limit(model, args.vllm_version)
    name = shown_model(args, flags, model.name)
    kv_note = kv_auto.note(settings.kv_cache_dtype, model.kv_quant, r.version)  # auto read from the checkpoint
    if args.output == "json":
        print(dumps(envelope("EstimateResult", {**result_json(est), "model": name, "gpu": gpu.product,
                                                # as typed (null: none), and as every output prints it
                                                "vllm_version": args.vllm_version, "vllm_version_label": r.label,
                                                "rules": r.provenance, "engine": engine,
                                                "refusal": refusal,  # config_refused: vLLM's words, else null
                                                "model_source": source,  # the config's: --hf-config-path's
                                                # null: no length key caps it
                                                "model_max_len": None if longest.unbounded else longest.tokens,
                                                "model_max_len_key": longest.key,
                                                "kv_cache_dtype_note": kv_note, **echo_inputs(args)})))
    else:
        room = capture_room(model, gpu, settings, est) if est.graph_capture_oom else None
        path = _hf_flags.config_path(flags)
        print(render(est, name if path is None or not args.model else f"{name} (config: --hf-config-path {path})",
                     gpu.product, label, longest, refusal, room, kv_note))
    return 0


def shown_model(args: argparse.Namespace, flags: dict[str, str], sized: str) -> str:
    """The model the estimate is for: with ``--hf-config-path`` the spec is named after the config it was read from,
    but vLLM serves ``--model`` with that config (``get_config(self.hf_config_path or self.model)``), so the model
    line names ``--model``; ``model_source`` says where the config came from."""
    return str(args.model) if _hf_flags.config_path(flags) is not None and args.model else sized


def result_json(est: Estimate) -> dict[str, object]:
    """``Estimate.to_json`` with the sizing figures null when vLLM refuses the start before it sizes anything."""
    return outcomes.sized_json(est)


def echo_inputs(args: argparse.Namespace) -> dict[str, object]:
    """Every input as given, defaults spelled out, so a JSON result says what it was sized for: the vLLM flags
    (``flags``, `vllm serve` names and spellings, ``--tp`` as tensor-parallel-size, ``--hf-overrides`` and
    ``--hf-config-path`` as typed), the model's revision and the
    memory model's own inputs (``--p2p``, ``--compile-cache``, ``--other-gib``, ``--allow-long-max-model-len``,
    ``--image-max-pixels``, null: the checkpoint's official processor; ``--vllm-use-v1``,
    ``--vllm-use-flashinfer-sampler``, ``--vllm-use-v2-model-runner``, ``--vllm-mla-disable``, null: unset)."""
    return {"flags": engine_flags(args), "revision": args.revision, "p2p": args.p2p or "unknown",
            "compile_cache": args.compile_cache or "cold", "other_gib": args.other_gib or 0.0,
            "allow_long_max_model_len": bool(args.allow_long_max_model_len),
            "image_max_pixels": args.image_max_pixels, "vllm_use_v1": args.vllm_use_v1,
            "vllm_use_flashinfer_sampler": args.vllm_use_flashinfer_sampler,
            "vllm_use_v2_model_runner": args.vllm_use_v2_model_runner,
            "vllm_mla_disable": getattr(args, "vllm_mla_disable", None)}


def render(est: Estimate, model: str, gpu: str, version: str, longest: model_len.Limit | None = None,
           refusal: str | None = None, room: CaptureRoom | None = None, kv_note: str | None = None) -> str:
    """The human view: a table of the budget and a one-line bar of the GPU's memory split (``refusal``: why vLLM
    refuses a ``config_refused`` start, ``Estimate.refusal``; ``room``: the capture step's parts on a predicted capture
    OOM, ``post_capture.capture_room``)."""
    outcome = est.outcome.value
    if refusal is not None:
        outcome = f"config_refused: {refusal}"
    if est.outcome is Outcome.MAX_LEN_EXCEEDS_MODEL and longest is not None:  # refused before any memory is used
        outcome = (f"max_len_exceeds_model: vLLM refuses --max-model-len {est.max_model_len:,} above the model's "
                   f"{longest.tokens:,} ({longest.key}); set it at most {longest.tokens:,}, or run with "
                   f"VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 (--allow-long-max-model-len) for a model known to take more")
    if est.outcome is Outcome.DTYPE_UNSUPPORTED:  # the worker refuses before loading anything (vllm.dtype_support)
        outcome = (f"dtype_unsupported: vLLM refuses bfloat16 on the {gpu} (compute capability below 8.0) before "
                   f"loading the model; set --dtype half (float16), or pin a GPU of capability 8.0 or newer")
    if est.graph_capture_oom and room is not None:  # vLLM's checks pass, then the start dies capturing its graphs
        outcome = (f"cudagraph_capture_oom: vLLM's checks pass and the KV cache is sized, then the CUDA graphs "
                   f"({est.cudagraph_gib:.2f} GiB) do not fit the {max(room.left, 0.0):.2f} GiB left for them: "
                   f"{max(room.unrequested, 0.0):.2f} GiB the budget leaves on the card")
        if room.freed > 0:
            outcome += (f", plus the profile's {room.freed:.2f} GiB activation (freed before the KV cache), less the "
                        f"{room.transient:.2f} GiB the capture's warm-up forwards and the sampler warm-up hold")
    if est.kv_allocation_oom:  # vLLM's checks pass, then allocating the flag-sized cache runs the card out
        left = est.total_gib - (est.peak_gib - est.cudagraph_gib - est.kv_cache_gib)
        outcome = (f"kv_cache_allocation_oom: vLLM's checks pass, then the {est.kv_cache_gib:.2f} GiB KV cache the "
                   f"flag sizes does not fit the {max(left, 0.0):.2f} GiB left on the card (CUDA OOM in "
                   f"initialize_kv_cache); lower or remove --kv-cache-memory-bytes / --num-gpu-blocks-override")
    if not outcomes.sized(est.outcome):
        return _render_refused(est, outcome, model, gpu, version)
    rows = [
        ("outcome", outcome),
        ("model / GPU / vLLM", f"{model} / {gpu} ({est.total_gib:.2f} GiB) / {version}"),
        ("weights", f"{est.weights_gib:.2f} GiB"),
        ("activation peak", f"{est.activation_gib:.2f} GiB"),
        ("non-torch", f"{est.non_torch_gib:.2f} GiB"),
        ("CUDA graphs", f"{est.cudagraph_gib:.2f} GiB"),
        ("KV cache", f"{est.kv_cache_gib:.2f} GiB = {est.kv_cache_tokens:,} tokens ({est.gpu_blocks:,} blocks)"
                     if outcomes.has_cache(est.outcome) else outcomes.NO_CACHE),
        ("max model len", f"{est.max_model_len:,}"),
        ("max concurrency", f"{est.max_concurrency:.2f}x at {est.max_model_len:,} tokens"
                            if outcomes.has_cache(est.outcome) else "none: no KV cache"),
        ("peak device memory", f"{est.peak_gib:.2f} of {est.total_gib:.2f} GiB"),
    ]
    if kv_note is not None:  # the cache dtype vLLM picks for auto from the checkpoint (``kv_auto``)
        rows.append(("KV cache dtype", kv_note))
    if est.needed_kv_gib is not None:
        rows.append(("KV needed for 1 request", f"{est.needed_kv_gib:.2f} GiB"))
    if est.suggested_max_model_len is not None:
        rows.append(("largest max-model-len", f"{est.suggested_max_model_len:,}"))
    width = max(len(k) for k, _ in rows)
    lines = [f"{k.ljust(width)}  {v}" for k, v in rows]
    return "\n".join([*lines, "", bar(est)])


def _render_refused(est: Estimate, outcome: str, model: str, gpu: str, version: str) -> str:
    """A start vLLM refuses at config time: only what it reached. Nothing is loaded, so no weights, activation, graph
    or KV figures; the device memory is what the refusal leaves held (``memory.core``: none of vLLM's before the
    max-length check, which runs before the GPU is touched; the worker's CUDA context for the dtype refusal)."""
    if est.outcome is Outcome.MAX_LEN_EXCEEDS_MODEL:
        device = "not touched: the model config refuses the length before vLLM uses the GPU"
    elif est.outcome is Outcome.CONFIG_REFUSED:
        device = f"{est.peak_gib:.2f} of {est.total_gib:.2f} GiB: refused at config time, nothing of vLLM's held"
    else:
        device = (f"{est.peak_gib:.2f} of {est.total_gib:.2f} GiB: the worker's CUDA context (and any other "
                  "process), nothing loaded")
    rows = [("outcome", outcome), ("model / GPU / vLLM", f"{model} / {gpu} ({est.total_gib:.2f} GiB) / {version}"),
            ("max model len", f"{est.max_model_len:,}"), ("memory", outcomes.NOT_SIZED), ("device memory", device)]
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k.ljust(width)}  {v}" for k, v in rows)


def bar(est: Estimate) -> str:
    """``[WWWWAGKKKK....] W weights | A activation | G graphs | K KV | . free`` scaled to the GPU. A start refused at
    the free-memory check loads nothing: its bar is what held the card then (``O``: other processes and vLLM's CUDA
    context, the peak ``free_memory_below_utilization`` reports)."""
    legend = "W weights | A activation | G graphs | K KV | . free"
    if est.outcome is Outcome.FREE_MEMORY_BELOW_UTILIZATION:
        parts = [("O", est.peak_gib)]
        legend = "O other processes + CUDA context | . free"
    else:
        parts = [("W", est.weights_gib), ("A", est.activation_gib + est.non_torch_gib), ("G", est.cudagraph_gib),
                 ("K", max(est.kv_cache_gib, 0.0) if outcomes.has_cache(est.outcome) else 0.0)]  # no cache: no K
    total = max(est.total_gib, 1e-9)
    cells: list[str] = []
    for char, gib in parts:  # clamped before rounding: a part many times the card is one full bar, not a huge string
        cells.extend(char * round(min(max(BAR_WIDTH * gib / total, 0.0), BAR_WIDTH - len(cells))))
    cells = cells[:BAR_WIDTH]
    cells.extend("." * (BAR_WIDTH - len(cells)))
    return f"[{''.join(cells)}] {legend}"
