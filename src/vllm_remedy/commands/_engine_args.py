"""Command-line arguments every memory command shares (estimate, plan): model, GPU, version, engine flags.

One definition so `estimate` and `plan` spell and validate them alike. ``with_defaults=False`` leaves unset
flags as None, for commands that layer the command line over flags read from a manifest.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from vllm_remedy import hub
from vllm_remedy.errors import UserError
from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.versions import typed_version

#: (flag, argparse dest) of the engine flags, in `vllm serve` spelling.
ENGINE_FLAGS = (
    ("tensor-parallel-size", "tp"),
    ("gpu-memory-utilization", "gpu_memory_utilization"),
    ("max-model-len", "max_model_len"),
    ("max-num-seqs", "max_num_seqs"),
    ("max-num-batched-tokens", "max_num_batched_tokens"),
    ("kv-cache-dtype", "kv_cache_dtype"),
    ("quantization", "quantization"),
    ("dtype", "dtype"),
)


def _output(value: str) -> str:
    return "text" if value == "human" else value


def add_output(parser: argparse.ArgumentParser) -> None:
    """``-o text|json`` as every other command spells it; ``human``, these commands' first spelling, is still
    accepted (scripts written for it keep working) but no longer offered."""
    parser.add_argument("-o", "--output", choices=("text", "json"), default="text", type=_output)


def _vllm_version(text: str) -> str:
    """--vllm-version checked whole: a typo must stop the command (exit 2), not size another release."""
    try:
        return typed_version(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_model_gpu(parser: argparse.ArgumentParser, required: bool = True) -> None:
    """``--model ID | --model-config FILE`` and ``--gpu LABEL | --gpu-memory-gib N`` (plus --vllm-version)."""
    model = parser.add_mutually_exclusive_group(required=required)
    model.add_argument("--model", metavar="ID",
                       help="Hugging Face id or local path (the catalog, the Hugging Face cache, then the Hub)")
    model.add_argument("--model-config", metavar="FILE", help="the model's config.json (any model)")
    gpu = parser.add_mutually_exclusive_group(required=required)
    gpu.add_argument("--gpu", metavar="LABEL", help="GPU product label (GFD, GKE or Karpenter value)")
    gpu.add_argument("--gpu-memory-gib", metavar="N", type=float, help="torch-visible GPU memory in GiB")
    parser.add_argument("--vllm-version", metavar="V", type=_vllm_version,
                        help="vLLM version (default: unknown, sized with the newest release's rules)")
    parser.add_argument("--revision", metavar="REV",
                        help="the model's revision on the Hub (branch, tag or commit), as vLLM's --revision")


def add_engine_flags(parser: argparse.ArgumentParser, with_defaults: bool = True) -> None:
    """The flags that move vLLM's memory budget, named as `vllm serve` names them."""
    d = with_defaults
    parser.add_argument("--tp", "--tensor-parallel-size", dest="tp", metavar="N", type=int, default=1 if d else None)
    # no default here: unset, the release's own default applies (0.9, or 0.92 from 0.22.1), as for a manifest
    parser.add_argument("--gpu-memory-utilization", metavar="U", type=float,
                        help="fraction of the GPU vLLM may use (default: the release's own)")
    parser.add_argument("--max-model-len", metavar="N", help="tokens per request (default: the model's)")
    parser.add_argument("--max-num-seqs", metavar="N", type=int)
    parser.add_argument("--max-num-batched-tokens", metavar="N", type=int)
    parser.add_argument("--kv-cache-dtype", choices=("auto", "fp8"), default="auto" if d else None)
    parser.add_argument("--quantization", metavar="Q")
    parser.add_argument("--dtype", metavar="D", default="auto" if d else None)
    parser.add_argument("--enforce-eager", action="store_true", default=None if not d else False)
    parser.add_argument("--other-gib", metavar="N", type=float,
                        help="GiB other processes hold on each GPU at startup (nvidia-smi)")
    parser.add_argument("--compile-cache", choices=("cold", "warm"),
                        help="vLLM's torch.compile cache at startup (default cold: a pod without a persistent "
                             "~/.cache/vllm compiles, and the compiler's autotuning adds to the memory profile)")


def engine_flags(args: argparse.Namespace) -> dict[str, str]:
    """The given engine flags as canonical `vllm serve` flags with string values (unset ones left out)."""
    flags = {flag: str(getattr(args, dest)) for flag, dest in ENGINE_FLAGS if getattr(args, dest) is not None}
    if getattr(args, "enforce_eager", None):
        flags["enforce-eager"] = "true"
    if getattr(args, "other_gib", None) is not None:
        flags["other-process-gib"] = str(args.other_gib)
    if getattr(args, "compile_cache", None) == "warm":
        flags["compile-cache-warm"] = "true"
    return flags


def load_model(args: argparse.Namespace, revision: str | None = None) -> catalog.ModelSpec:
    """The model for --model (catalog, Hugging Face cache, Hub: see ``hub``), or the spec read from --model-config."""
    return load_model_source(args, revision)[0]


def load_model_source(args: argparse.Namespace, revision: str | None = None) -> tuple[catalog.ModelSpec, str]:
    """(spec, where its config came from: ``catalog``, the cache or Hub, the --model-config file)."""
    if args.model:
        try:
            return hub.resolve(args.model, getattr(args, "revision", None) or revision)
        except UserError as exc:
            raise UserError(f"{exc}; pass --model-config with its config.json") from None
    path = Path(args.model_config)
    try:
        text = path.read_bytes()
    except OSError as exc:
        raise UserError(f"{path}: cannot read ({exc.strerror or exc})") from None
    return hub.spec_from_json(text, str(path), str(path)), str(path)


def load_gpu(args: argparse.Namespace) -> catalog.GpuSpec:
    """The catalog GPU for --gpu, or a card of --gpu-memory-gib (no fp8 assumed)."""
    if args.gpu_memory_gib is not None:
        if args.gpu_memory_gib <= 0:
            raise UserError(f"--gpu-memory-gib: {args.gpu_memory_gib} must be > 0")
        return catalog.GpuSpec("custom", float(args.gpu_memory_gib), catalog.UNKNOWN_CAPABILITY, False,
                               int(args.gpu_memory_gib * 1024))
    return catalog.gpu(args.gpu)
