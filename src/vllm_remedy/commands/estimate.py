"""Predict what vLLM does at startup on a GPU: memory split, KV cache tokens, concurrency, outcome.

Examples:
  vllm-remedy estimate --model meta-llama/Llama-3.1-8B-Instruct --gpu NVIDIA-L4 --max-model-len 16384
  vllm-remedy estimate --model-config config.json --gpu-memory-gib 44.4 --vllm-version 0.8.5 -o json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from vllm_remedy.errors import UserError
from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.memory import EngineSettings, Estimate, estimate
from vllm_remedy.vllm.versions import rules

NAME = "estimate"
HELP = "predict vLLM's startup memory split, KV cache and outcome for a model on a GPU"
BAR_WIDTH = 60


def configure(parser: argparse.ArgumentParser) -> None:
    model = parser.add_mutually_exclusive_group(required=True)
    model.add_argument("--model", metavar="ID", help="Hugging Face id or local path of a catalog model")
    model.add_argument("--model-config", metavar="FILE", help="the model's config.json (any model)")
    gpu = parser.add_mutually_exclusive_group(required=True)
    gpu.add_argument("--gpu", metavar="LABEL", help="GPU product label (GFD, GKE or Karpenter value)")
    gpu.add_argument("--gpu-memory-gib", metavar="N", type=float, help="torch-visible GPU memory in GiB")
    parser.add_argument("--vllm-version", metavar="V", help="vLLM version (default: newest rules modelled)")
    parser.add_argument("--tp", "--tensor-parallel-size", dest="tp", metavar="N", type=int, default=1)
    parser.add_argument("--gpu-memory-utilization", metavar="U", type=float, default=0.9)
    parser.add_argument("--max-model-len", metavar="N", help="tokens per request (default: the model's)")
    parser.add_argument("--max-num-seqs", metavar="N", type=int)
    parser.add_argument("--max-num-batched-tokens", metavar="N", type=int)
    parser.add_argument("--kv-cache-dtype", choices=("auto", "fp8"), default="auto")
    parser.add_argument("--quantization", metavar="Q")
    parser.add_argument("--dtype", metavar="D", default="auto")
    parser.add_argument("--enforce-eager", action="store_true")
    parser.add_argument("-o", "--output", choices=("human", "json"), default="human")


def _load_model(args: argparse.Namespace) -> catalog.ModelSpec:
    if args.model:
        return catalog.model(args.model)
    path = Path(args.model_config)
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UserError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: not valid JSON ({exc})") from None
    return catalog.ModelSpec.from_hf_config(config, name=str(path))


def _load_gpu(args: argparse.Namespace) -> catalog.GpuSpec:
    if args.gpu_memory_gib is not None:
        if args.gpu_memory_gib <= 0:
            raise UserError(f"--gpu-memory-gib: {args.gpu_memory_gib} must be > 0")
        return catalog.GpuSpec("custom", float(args.gpu_memory_gib), "0.0", False, int(args.gpu_memory_gib * 1024))
    return catalog.gpu(args.gpu)


def _flags(args: argparse.Namespace) -> dict[str, str]:
    flags = {"tensor-parallel-size": str(args.tp), "gpu-memory-utilization": str(args.gpu_memory_utilization),
             "kv-cache-dtype": args.kv_cache_dtype, "dtype": args.dtype}
    for key, value in (("max-model-len", args.max_model_len), ("max-num-seqs", args.max_num_seqs),
                       ("max-num-batched-tokens", args.max_num_batched_tokens), ("quantization", args.quantization)):
        if value is not None:
            flags[key] = str(value)
    if args.enforce_eager:
        flags["enforce-eager"] = "true"
    return flags


def run(args: argparse.Namespace) -> int:
    model = _load_model(args)
    gpu = _load_gpu(args)
    est = estimate(model, gpu, EngineSettings.from_flags(_flags(args), args.vllm_version))
    if args.output == "json":
        print(json.dumps({**est.to_json(), "model": model.name, "gpu": gpu.product,
                          "vllm_version": rules(args.vllm_version).label}, indent=2))
    else:
        print(render(est, model.name, gpu.product, rules(args.vllm_version).label))
    return 0


def render(est: Estimate, model: str, gpu: str, version: str) -> str:
    """The human view: a table of the budget and a one-line bar of the GPU's memory split."""
    rows = [
        ("outcome", est.outcome.value),
        ("model / GPU / vLLM", f"{model} / {gpu} ({est.total_gib:.2f} GiB) / {version}"),
        ("weights", f"{est.weights_gib:.2f} GiB"),
        ("activation peak", f"{est.activation_gib:.2f} GiB"),
        ("non-torch", f"{est.non_torch_gib:.2f} GiB"),
        ("CUDA graphs", f"{est.cudagraph_gib:.2f} GiB"),
        ("KV cache", f"{est.kv_cache_gib:.2f} GiB = {est.kv_cache_tokens:,} tokens ({est.gpu_blocks:,} blocks)"),
        ("max model len", f"{est.max_model_len:,}"),
        ("max concurrency", f"{est.max_concurrency:.2f}x at {est.max_model_len:,} tokens"),
        ("peak device memory", f"{est.peak_gib:.2f} of {est.total_gib:.2f} GiB"),
    ]
    if est.needed_kv_gib is not None:
        rows.append(("KV needed for 1 request", f"{est.needed_kv_gib:.2f} GiB"))
    if est.suggested_max_model_len is not None:
        rows.append(("largest max-model-len", f"{est.suggested_max_model_len:,}"))
    width = max(len(k) for k, _ in rows)
    lines = [f"{k.ljust(width)}  {v}" for k, v in rows]
    return "\n".join([*lines, "", bar(est)])


def bar(est: Estimate) -> str:
    """``[WWWWAGKKKK....] W weights | A activation | G graphs | K KV | . free`` scaled to the GPU."""
    parts = [("W", est.weights_gib), ("A", est.activation_gib + est.non_torch_gib), ("G", est.cudagraph_gib),
             ("K", max(est.kv_cache_gib, 0.0))]
    total = max(est.total_gib, 1e-9)
    cells: list[str] = []
    for char, gib in parts:
        cells.extend(char * round(BAR_WIDTH * gib / total))
    cells = cells[:BAR_WIDTH]
    cells.extend("." * (BAR_WIDTH - len(cells)))
    return f"[{''.join(cells)}] W weights | A activation | G graphs | K KV | . free"
