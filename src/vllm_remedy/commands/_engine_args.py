"""Command-line arguments every memory command shares (estimate, plan): model, GPU, version, engine flags.

One definition so `estimate` and `plan` spell and validate them alike. ``with_defaults=False`` leaves unset
flags as None, for commands that layer the command line over flags read from a manifest.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from collections.abc import Mapping
from pathlib import Path

from vllm_remedy import hub
from vllm_remedy.commands import _hf_flags
from vllm_remedy.errors import UserError
from vllm_remedy.remedies.plan import Plan, Step
from vllm_remedy.vllm import catalog, engine_env, gpu_catalog, hf_overrides, mla_env, runner_env, sampler_env
from vllm_remedy.vllm.cmdline.ranges import INT_MAX
from vllm_remedy.vllm.memory import EngineSettings, Estimate
from vllm_remedy.vllm.memory.config_values import ConfigRefused
from vllm_remedy.vllm.outcomes import Failure, Outcome
from vllm_remedy.vllm.versions import rules, typed_version

#: The largest GPU (or other-process) memory a card may state: 4 TiB is far above any accelerator, and a bound
#: keeps ``inf`` or ``1e300`` from reaching the integer MiB conversion and the bar's scale.
MAX_GIB = 4096.0

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
    ("limit-mm-per-prompt", "limit_mm_per_prompt"),
    ("kv-cache-memory-bytes", "kv_cache_memory_bytes"),
    ("num-gpu-blocks-override", "num_gpu_blocks_override"),
    ("max-loras", "max_loras"),
    ("max-lora-rank", "max_lora_rank"),
    ("speculative-config", "speculative_config"),
    ("hf-overrides", "hf_overrides"),
    ("hf-config-path", "hf_config_path"),
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


# The flag types below refuse, as argparse's own one-line usage error (exit 2), what no rule downstream can read:
# a non-number, nan or inf (they crashed the integer MiB conversion), and a size or count beyond any card or
# int32 (a 20-digit count made the activation estimate, and the bar drawn from it, exhaust memory). The ranges
# vLLM itself states (0 < U <= 1, counts and --tp >= 1, --other-gib >= 0) stay with ``EngineSettings``, which
# words them the same for a flag given here and one read from a manifest.


def _number(text: str) -> float:
    """A finite float: ``nan`` and ``inf`` bound nothing."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


def _gpu_gib(text: str) -> float:
    """--gpu-memory-gib: 1 to 4096 GiB (no card is smaller or larger; nothing else checks this flag)."""
    value = _number(text)
    if not 1 <= value <= MAX_GIB:
        raise argparse.ArgumentTypeError(f"{text} is out of range; expected 1 <= N <= {MAX_GIB:g} GiB")
    return value


def _other_gib(text: str) -> float:
    """--other-gib: finite and at most 4096 GiB (a negative value is EngineSettings' error)."""
    value = _number(text)
    if value > MAX_GIB:
        raise argparse.ArgumentTypeError(f"{text} is out of range; expected 0 <= N <= {MAX_GIB:g} GiB")
    return value


def _count(text: str) -> int:
    """A count within int32, as vLLM keeps token counts (zero or negative is EngineSettings' error)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value > INT_MAX:
        raise argparse.ArgumentTypeError(f"{text} is out of range; expected 1 <= N <= {INT_MAX}")
    return value


def _typed_count(text: str) -> str:
    """A vLLM count flag (--tp, --max-num-seqs): checked as :func:`_count`, kept as typed (``064``), so a JSON echo
    says what was given, as it does for --max-model-len and the version; vLLM's ``int()`` reads it alike."""
    _count(text)
    return text


def _typed_number(text: str) -> str:
    """--gpu-memory-utilization: checked as :func:`_number`, kept as typed (``0.90``), like :func:`_typed_count`."""
    _number(text)
    return text


def _release_int(text: str, auto: bool = False) -> str:
    """A token count read by --vllm-version's own parser (``16384``, ``16k``, ``8k``, ``auto`` for --max-model-len),
    kept as text: whether ``16k``, ``1t`` or ``1e4`` is a number depends on the release, which is not known while
    argparse reads argv, so ``EngineSettings`` judges it naming that release (``values.refusal``) and
    :func:`check_int32` bounds what it makes of it. A plain integer reads alike everywhere: bounded here."""
    if auto and text.strip().lower() == "auto":
        return text
    try:
        value = int(text)
    except ValueError:
        return text
    if value > INT_MAX:
        raise argparse.ArgumentTypeError(f"{text} is out of range; expected 1 <= N <= {INT_MAX}"
                                         f"{' (or auto)' if auto else ''}")
    return text


def _max_model_len(text: str) -> str:
    """--max-model-len as the release reads it (:func:`_release_int`)."""
    return _release_int(text, auto=True)


def check_int32(settings: EngineSettings, flags: dict[str, str]) -> None:
    """A count the release read above int32 (``9999999k``, ``1t`` from 0.13.0) is refused, as one line naming the
    flag: vLLM keeps token counts in int32 (``ranges.INT_MAX``)."""
    for flag, got in (("max-model-len", settings.max_model_len), ("max-num-batched-tokens",
                                                                  settings.max_num_batched_tokens)):
        if got is not None and got > INT_MAX:
            raise UserError(f"{flag}: {flags.get(flag, got)} is {got:,} tokens to vLLM {rules(settings.version).label}"
                            f", out of range; expected 1 <= N <= {INT_MAX}")


def add_model_gpu(parser: argparse.ArgumentParser, required: bool = True) -> None:
    """``--model ID | --model-config FILE`` and ``--gpu LABEL | --gpu-memory-gib N`` (plus --vllm-version)."""
    model = parser.add_mutually_exclusive_group(required=required)
    model.add_argument("--model", metavar="ID",
                       help="Hugging Face id or local path (the catalog, the Hugging Face cache, then the Hub)")
    model.add_argument("--model-config", metavar="FILE", help="the model's config.json (any model)")
    gpu = parser.add_mutually_exclusive_group(required=required)
    gpu.add_argument("--gpu", metavar="LABEL", help="GPU product label (GFD, GKE or Karpenter value)")
    gpu.add_argument("--gpu-memory-gib", metavar="N", type=_gpu_gib,
                     help="torch-visible GPU memory in GiB (1 to 4096)")
    parser.add_argument("--vllm-version", metavar="V", type=_vllm_version,
                        help="vLLM version (default: unknown, sized with the newest release's rules)")
    parser.add_argument("--revision", metavar="REV",
                        help="the model's revision on the Hub (branch, tag or commit), as vLLM's --revision")


def add_engine_flags(parser: argparse.ArgumentParser, with_defaults: bool = True) -> None:
    """The flags that move vLLM's memory budget, named as `vllm serve` names them."""
    d = with_defaults
    parser.add_argument("--tp", "--tensor-parallel-size", dest="tp", metavar="N", type=_typed_count,
                        default=1 if d else None)
    # no default here: unset, the release's own default applies (0.9, or 0.92 from 0.22.1), as for a manifest
    parser.add_argument("--gpu-memory-utilization", metavar="U", type=_typed_number,
                        help="fraction of the GPU vLLM may use (default: the release's own)")
    parser.add_argument("--max-model-len", metavar="N", type=_max_model_len,
                        help="tokens per request (default: the model's)")
    parser.add_argument("--max-num-seqs", metavar="N", type=_typed_count)
    parser.add_argument("--max-num-batched-tokens", metavar="N", type=_release_int,
                        help="tokens per scheduler step, read as the release reads it (8k = 8000 where it takes "
                             "suffixes)")
    parser.add_argument("--kv-cache-dtype", choices=("auto", "fp8"), default="auto" if d else None)
    parser.add_argument("--quantization", metavar="Q")
    parser.add_argument("--dtype", metavar="D", default="auto" if d else None)
    parser.add_argument("--enforce-eager", action="store_true", default=None if not d else False)
    parser.add_argument("--enable-expert-parallel", action="store_true", default=None,
                        help="vLLM's --enable-expert-parallel: an MoE's experts whole on each GPU (0.8.0+)")
    parser.add_argument("--limit-mm-per-prompt", metavar="JSON",
                        help="items per prompt by modality, as vLLM's flag ('{\"image\": 1, \"video\": 0}', or "
                             "image=1,video=0): a multimodal model's encoder is profiled on the most expensive "
                             "modality allowed, so capping video lets --image-max-pixels decide the profile "
                             "(default: the model's own limits)")
    # read as the release reads them (EngineSettings.from_flags): 4G on 0.10.2+, refused before that release
    parser.add_argument("--kv-cache-memory-bytes", metavar="N",
                        help="KV cache bytes per GPU (vLLM 0.10.2+): the flag, not the utilization budget, sizes it")
    parser.add_argument("--num-gpu-blocks-override", metavar="N",
                        help="KV cache blocks, whatever the memory (vLLM's --num-gpu-blocks-override)")
    # accepted so the answer is the memory model's "cannot predict <flag>" (``unmodelled``), not argparse's
    # "unrecognized arguments" for a flag `vllm serve` takes
    parser.add_argument("--enable-lora", action="store_true", default=None,
                        help="LoRA adapters (vLLM's --enable-lora): its buffers are not sized, so: cannot predict")
    parser.add_argument("--max-loras", metavar="N", help="vLLM's --max-loras (with --enable-lora)")
    parser.add_argument("--max-lora-rank", metavar="N", help="vLLM's --max-lora-rank (with --enable-lora)")
    parser.add_argument("--speculative-config", "-sc", metavar="JSON",
                        help="vLLM's speculative decoding config: its draft model or heads are not sized, so: "
                             "cannot predict")
    # the config vLLM sizes, applied as a manifest's are (``_hf_flags``, ``vllm.hf_overrides``)
    parser.add_argument("--hf-overrides", metavar="JSON", action=_hf_flags.Occurrences,
                        help="vLLM's --hf-overrides (0.6.4+): config.json keys replaced before anything is derived "
                             "('{\"num_hidden_layers\": 16}'; from 0.12.0 a sub-config's dict merges, another dict "
                             "replaces, as the release applies it); a "
                             "key the memory model does not read: cannot predict")
    parser.add_argument("--hf-config-path", metavar="PATH",
                        help="vLLM's --hf-config-path (0.8+): the config is read from PATH (a Hub repository or a "
                             "local directory, resolved as --model) instead of the model's")
    parser.add_argument("--other-gib", metavar="N", type=_other_gib,
                        help="GiB other processes hold on each GPU at startup (nvidia-smi)")
    parser.add_argument("--compile-cache", choices=("cold", "warm"),
                        help="vLLM's torch.compile cache at startup (default cold: a pod without a persistent "
                             "~/.cache/vllm compiles, and the compiler's autotuning adds to the memory profile)")
    parser.add_argument("--p2p", choices=("yes", "no", "unknown"),
                        help="whether the TP GPUs of one node have CUDA peer access (`nvidia-smi topo -p2p r`; vLLM "
                             "logs \"lacks GPU P2P capability\" when not); without it NCCL keeps its buffers in host "
                             "memory, counted on V1 below Hopper (default unknown: sized as present, less KV)")
    parser.add_argument("--allow-long-max-model-len", action="store_true", default=None,
                        help="the pod's env sets VLLM_ALLOW_LONG_MAX_MODEL_LEN=1: vLLM then only warns about a "
                             "--max-model-len above the model's maximum instead of refusing to start")
    parser.add_argument("--vllm-use-v1", metavar="VALUE",
                        help="the pod's env sets VLLM_USE_V1 to VALUE (0 or 1): on 0.8-0.10 0 runs the V0 engine, "
                             "sized by V0's rules; 0.11.0 refuses 0; from 0.11.1 it is ignored (vllm.engine_env)")
    parser.add_argument("--vllm-use-flashinfer-sampler", metavar="VALUE",
                        help="the pod's env sets VLLM_USE_FLASHINFER_SAMPLER to VALUE (0 or 1): 0 keeps V1's sampler "
                             "off FlashInfer's kernel, 1 opts in on 0.11.1-0.20 and is refused where FlashInfer "
                             "cannot run from 0.12 (vllm.sampler_env)")
    parser.add_argument("--vllm-use-v2-model-runner", metavar="VALUE",
                        help="the pod's env sets VLLM_USE_V2_MODEL_RUNNER to VALUE (0 or 1): from 0.22 it overrides "
                             "the release's runner choice; 0.34 refuses 0 (vllm.runner_env)")
    parser.add_argument("--vllm-mla-disable", metavar="VALUE",
                        help="the pod's env sets VLLM_MLA_DISABLE to VALUE (0 or 1): from 0.7.1 1 turns MLA off, so "
                             "a DeepSeek-style model caches K and V per head (vllm.mla_env)")
    parser.add_argument("--image-max-pixels", metavar="N", type=_count,
                        help="the checkpoint's image-processor cap (preprocessor_config.json size.longest_edge or "
                             "max_pixels): Qwen3-VL profiles its encoder on images this large (default: the "
                             "official processor's; a pod's --mm-processor-kwargs max_pixels wins)")


def engine_flags(args: argparse.Namespace) -> dict[str, str]:
    """The given engine flags as canonical `vllm serve` flags with string values (unset ones left out)."""
    flags = {flag: str(getattr(args, dest)) for flag, dest in ENGINE_FLAGS if getattr(args, dest) is not None}
    for flag, dest in (("enforce-eager", "enforce_eager"), ("enable-lora", "enable_lora"),
                       ("enable-expert-parallel", "enable_expert_parallel")):
        if getattr(args, dest, None):
            flags[flag] = "true"
    return flags


def model_inputs(args: argparse.Namespace) -> dict[str, str]:
    """--other-gib, --compile-cache, --p2p, --allow-long-max-model-len, --image-max-pixels, --vllm-use-v1,
    --vllm-use-flashinfer-sampler, --vllm-use-v2-model-runner and --vllm-mla-disable as the memory model's own inputs
    (``settings.MODEL_INPUTS``): not vLLM flags."""
    inputs: dict[str, str] = {}
    if getattr(args, "other_gib", None) is not None:
        inputs["other-process-gib"] = str(args.other_gib)
    if getattr(args, "compile_cache", None) == "warm":
        inputs["compile-cache-warm"] = "true"
    if getattr(args, "p2p", None) in ("yes", "no"):
        inputs["p2p"] = "true" if args.p2p == "yes" else "false"
    if getattr(args, "allow_long_max_model_len", None):
        inputs["allow-long-max-model-len"] = "true"
    if getattr(args, "image_max_pixels", None) is not None:
        inputs["image-max-pixels"] = str(args.image_max_pixels)
    if getattr(args, "vllm_use_v1", None) is not None:  # the env's text, judged as the release reads it
        inputs[engine_env.INPUT] = str(args.vllm_use_v1)
    if getattr(args, "vllm_use_flashinfer_sampler", None) is not None:
        inputs[sampler_env.INPUT] = str(args.vllm_use_flashinfer_sampler)
    if getattr(args, "vllm_use_v2_model_runner", None) is not None:
        inputs[runner_env.INPUT] = str(args.vllm_use_v2_model_runner)
    if getattr(args, "vllm_mla_disable", None) is not None:
        inputs[mla_env.INPUT] = str(args.vllm_mla_disable)
    return inputs


def load_model(args: argparse.Namespace, revision: str | None = None) -> catalog.ModelSpec:
    """The model for --model (catalog, Hugging Face cache, Hub: see ``hub``), or the spec read from --model-config."""
    return load_model_source(args, revision)[0]


def load_model_source(args: argparse.Namespace, revision: str | None = None, warm: bool = True
                      ) -> tuple[catalog.ModelSpec, str]:
    """(spec, where its config came from: ``catalog``, the cache or Hub, the --model-config file). ``warm``: replay
    a --model-config's AWQ Marlin load now (``awq_marlin_load.warm``; ``hub.resolve`` does it for what it resolves);
    off for a caller that estimates another spec."""
    from vllm_remedy.vllm.memory import awq_marlin_load  # an AWQ load's replay is resolution's work

    if args.model:
        try:
            return hub.resolve(args.model, getattr(args, "revision", None) or revision)
        except UserError as exc:  # --model-config reads the same files: it only helps where resolving failed
            raise UserError(str(exc) if "cannot predict" in str(exc) else
                            f"{exc}; pass --model-config with its config.json") from None
    path = Path(args.model_config)
    text = hub.read_file(path, str(path))  # a regular file only: a FIFO or a device would block
    # ModelOpt's hf_quant_config.json beside it, read as for --model dir (vLLM's get_config from 0.10.1)
    config = hub.config_beside(hub.config_from_json(text, str(path)), path.parent)
    spec = hub.spec_from_config(config, str(path), str(path))
    hf_overrides.remember(str(path), None, config)  # the base --hf-overrides is applied to (``_hf_flags``)
    if warm:  # resolution's work, once per machine: the estimates after it stay pure and fast
        awq_marlin_load.warm(spec)
    return spec, str(path)


def load_configured(args: argparse.Namespace, flags: Mapping[str, str], version: str | None
                    ) -> tuple[catalog.ModelSpec, str]:
    """(spec, source) of the config vLLM sizes: ``--hf-config-path``'s (resolved as --model is) when given, else the
    model's; ``--hf-overrides`` applied to it, both read as a manifest's are (``_hf_flags``). The AWQ Marlin replay
    is done here for the spec estimated (the overridden one), not the one read: else it lands in the estimate."""
    from vllm_remedy.vllm.memory import awq_marlin_load

    _hf_flags.refusal(flags, version, _hf_flags.earlier(args) if _hf_flags.FLAG in flags else ())
    path = _hf_flags.config_path(flags)
    if path is None:
        spec, source = load_model_source(args, warm=False)
        config_from = args.model or str(Path(args.model_config))
    elif args.model_config:
        raise _hf_flags.path_with_model_config()
    else:
        spec, source = _hf_flags.resolved_path(path, lambda p: hub.resolve(p, args.revision))
        config_from = path
    spec = _hf_flags.overridden(spec, config_from, args.revision, flags, version)
    awq_marlin_load.warm(spec)
    return spec, source


def load_gpu(args: argparse.Namespace) -> catalog.GpuSpec:
    """The catalog GPU for --gpu, or a card of --gpu-memory-gib (no fp8 assumed)."""
    if args.gpu_memory_gib is not None:  # bounded by its argparse type (_gpu_gib)
        return catalog.GpuSpec("custom", float(args.gpu_memory_gib), gpu_catalog.UNKNOWN_CAPABILITY, False,
                               int(args.gpu_memory_gib * 1024))
    return catalog.gpu(args.gpu)


#: The flags whose literal vLLM's config classes may refuse (``config_values``), in the order a plan unsets them.
REFUSABLE = ("max-model-len", "max-num-seqs", "gpu-memory-utilization", "quantization", "load-format", "swap-space",
             "optimization-level")


def refusable_settings(flags: Mapping[str, str], version: str | None, inputs: Mapping[str, str],
                       hidden: tuple[str, ...] = ()) -> tuple[EngineSettings, ConfigRefused | None, tuple[str, ...]]:
    """(settings, vLLM's config-time refusal, the flags left out to size the rest): a literal vLLM's config classes
    refuse (``ConfigRefused``, as ``check`` reads it) is a predicted ``config_refused`` start, not bad input; the
    settings are those without it (the release's default), and without any other literal refused once it is gone,
    so the plan can say what else the start needs."""
    try:
        return EngineSettings.from_flags(dict(flags), version, dict(inputs), hidden), None, ()
    except ConfigRefused as exc:
        refused = current = exc
    left: dict[str, str] = dict(flags)
    while current.flag in REFUSABLE and current.flag in left:  # each refusal names its flag (``ConfigRefused.flag``)
        del left[current.flag]
        try:
            settings = EngineSettings.from_flags(left, version, dict(inputs), hidden)
        except ConfigRefused as again:
            current = again
            continue
        return settings, refused, tuple(f for f in REFUSABLE if f in flags and f not in left)
    raise refused


def refused_estimate(est: Estimate, refused: ConfigRefused, settings: EngineSettings) -> Estimate:
    """``est`` as the ``config_refused`` start vLLM makes of it: nothing sized, only the other processes' memory
    held, the refusal in ``check``'s words (``ConfigRefused.phrase``)."""
    return dataclasses.replace(est, outcome=Outcome.CONFIG_REFUSED, weights_gib=0.0, activation_gib=0.0,
                               non_torch_gib=0.0, cudagraph_gib=0.0, kv_cache_gib=0.0, kv_cache_tokens=0,
                               gpu_blocks=0, max_concurrency=0.0, peak_gib=settings.other_process_gib,
                               needed_kv_gib=None, suggested_max_model_len=None, graph_capture_oom=False,
                               kv_allocation_oom=False, refusal=refused.phrase, refused_by=None)


def refused_plan(plan: Plan, refused: ConfigRefused, dropped: tuple[str, ...], settings: EngineSettings,
                 version: str | None) -> Plan:
    """``plan`` (made without the refused literals) for the start as written: ``config_refused`` in check's words
    first, every step unsetting those flags (the release's default), one step doing only that when nothing else
    needs changing."""
    current = refused_estimate(plan.current, refused, settings)
    steps = tuple(dataclasses.replace(s, unset=(*s.unset, *(f for f in dropped if f not in s.set and f not in s.unset)))
                  for s in plan.steps)
    verdict = plan.verdict
    if verdict == "no_change_needed":
        steps = (Step(rank=1, lever="config", reason=f"write a value vLLM {rules(version).label} accepts: unset it "
                      "(the release's default); nothing else changes", prediction=plan.current, unset=dropped),)
        verdict = "change"
    before = "" if plan.problem.startswith("none:") else f"; {plan.problem}"
    return Plan(plan.kind, verdict, f"predicted {Failure.CONFIG_REFUSED.value} — {refused.phrase}{before}", current,
                steps, plan.notes, plan.subject)
