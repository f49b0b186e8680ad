"""Engine settings as vLLM sees them: the flags that move the memory budget, and their defaults.

Callers (the CLI, the planner, the rehearsal cluster) hold flags as canonical dash-named strings;
``EngineSettings.from_flags`` turns them into typed values, ``resolve`` applies the defaults the
running version would apply so the estimator works on what vLLM will actually use.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from vllm_remedy.errors import UserError
from vllm_remedy.vllm import (
    dtype_support,
    engine_env,
    gemma2_cap,
    kv_auto,
    manifest_flags_file,
    mla_env,
    runner_env,
    sampler_env,
)
from vllm_remedy.vllm.catalog import GpuSpec, ModelSpec
from vllm_remedy.vllm.cmdline.flags import canonical_key
from vllm_remedy.vllm.cmdline.values import parse_int
from vllm_remedy.vllm.memory.attn_block import block_size as attn_block_size
from vllm_remedy.vllm.memory.chunked import chunked_prefill, v0_default_batch
from vllm_remedy.vllm.memory.compiled import compilation_settings
from vllm_remedy.vllm.memory.config_values import FIELDS_SINCE, checked, quantization
from vllm_remedy.vllm.memory.flag_values import (
    read_bool,
    read_capture_size,
    read_float,
    read_int,
    read_mm_limits,
)
from vllm_remedy.vllm.memory.in_flight import async_flag, async_scheduling, batches
from vllm_remedy.vllm.memory.mla_block import block_size as mla_block_size
from vllm_remedy.vllm.memory.mla_cache import alignment_unknown as mla_alignment_unknown
from vllm_remedy.vllm.memory.mla_cache import cache_dtype as mla_cache_dtype
from vllm_remedy.vllm.memory.mla_release import runs_mla
from vllm_remedy.vllm.memory.mm_processor import mm_processor_max_pixels
from vllm_remedy.vllm.memory.pinned import pin_flags, rules_without_extensible_cache
from vllm_remedy.vllm.memory.pipeline import pipeline_unmodelled
from vllm_remedy.vllm.memory.resolved import Resolved
from vllm_remedy.vllm.memory.tp_split import tp_split_problem
from vllm_remedy.vllm.memory.unmodelled import CannotPredict, unmodelled
from vllm_remedy.vllm.mp_split import SplitRun
from vllm_remedy.vllm.runner_v2 import runner_v2_by_default
from vllm_remedy.vllm.versions import VersionRules, parse_version, rules

KV_DTYPES = frozenset({"auto", "fp8", "fp8_e4m3", "fp8_e5m2", "bfloat16", "float16", "fp8_inc", "fp8_ds_mla"})
DTYPES = frozenset({"auto", "bfloat16", "float16", "half", "float32", "float"})
#: `--max-model-len auto` (or -1): vLLM fits the longest length the KV cache holds (vllm#29431). The first release that
#: takes it is 0.14.0: ``human_readable_int_or_auto`` and ``ModelConfig.max_model_len: Field(ge=-1)`` (config/model.py);
#: 0.12.0 and 0.13.0 still parse it with ``human_readable_int`` ("auto" refused) and 0.13.0's field is ``gt=0``.
AUTO_MAX_MODEL_LEN_SINCE = (0, 14, 0)
#: What the memory model needs beyond vLLM's flags: GiB other processes hold on the card, whether the sampler takes
#: FlashInfer's kernel (an install fact), whether the torch.compile cache is warm, whether the TP ranks' GPUs have
#: CUDA peer access and whether the host is WSL2 (machine facts), whether the env allows a length above the model's
#: (VLLM_ALLOW_LONG_MAX_MODEL_LEN), the checkpoint's image-processor pixel cap (preprocessor_config.json,
#: ``EngineSettings.image_max_pixels``), the env's VLLM_USE_V1, VLLM_USE_FLASHINFER_SAMPLER and
#: VLLM_USE_V2_MODEL_RUNNER (their text, or why it cannot be read: ``vllm.engine_env``, ``vllm.sampler_env``,
#: ``vllm.runner_env``).
#: ``EngineSettings.from_flags`` takes them apart from the flags.
MODEL_INPUTS = frozenset({"other-process-gib", "flashinfer", "compile-cache-warm", "p2p", "allow-long-max-model-len",
                          "image-max-pixels", "wsl", *(key for _, *keys, _ in engine_env.VARIABLES for key in keys)})
_UNKNOWN = frozenset({"unknown", "auto", "none"})


@dataclass(frozen=True)
class EngineSettings:
    """The startup settings that decide memory; None means "the version's default"."""

    version: str | None = None
    tp: int = 1
    pp: int = 1  # --pipeline-parallel-size: above 1 the estimate is unknown (``pipeline``)
    gpu_memory_utilization: float = 0.9
    max_model_len: int | None = None  # None = the model's derived length; -1 = "auto" (largest that fits)
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    kv_cache_dtype: str = "auto"
    dtype: str = "auto"
    quantization: str | None = None
    load_format: str = "auto"  # --load-format: which loader reads a bitsandbytes checkpoint (quant_bnb)
    enforce_eager: bool = False
    block_size: int | None = None
    enable_chunked_prefill: bool | None = None
    other_process_gib: float = 0.0  # memory other processes hold on each GPU at startup
    # The largest batch size captured as a CUDA graph (--max-cudagraph-capture-size, --cuda-graph-sizes N, the config's)
    cudagraph_capture_size: int | None = None
    # --compilation-config / -O (``cmdline.compilation``): V1 captures no CUDA graphs, compiles nothing either (-O0), or
    # takes its capture sizes from the config (a capture-size flag would not change them)
    cudagraphs_off: bool = False
    compile_off: bool = False
    capture_sizes_in_config: bool = False
    # FlashInfer imports in the image (a startup log says "Using FlashInfer for top-p & top-k sampling"); None =
    # unknown, sized as absent (the PyTorch sort, more memory). Matters only where the version's V1 sampler takes
    # FlashInfer by default (``VersionRules.flashinfer_sampler_by_default``).
    flashinfer: bool | None = None
    # The start finds a populated torch.compile cache (its log: "Directly load AOT compilation"). Unknown is cold:
    # a pod without a persistent compile cache always is, and a cold profile peaks higher (less KV, the safe side).
    compile_cache_warm: bool = False
    # The TP ranks' GPUs can access each other's memory (CUDA P2P; a log says no with "Custom allreduce is disabled
    # because your platform lacks GPU P2P capability"). None = unknown, sized as present (the larger non-torch figure,
    # less KV); see ``non_torch.non_torch_gib``.
    p2p: bool | None = None
    # The process runs under WSL2 (vLLM logs "Using 'pin_memory=False' as WSL is detected", platforms/interface.py
    # @0.10.2 ``in_wsl``): device memory it lacks outside vLLM's checks spills to host memory (``post_capture``).
    wsl: bool = False
    # The container's env sets VLLM_ALLOW_LONG_MAX_MODEL_LEN: vLLM warns instead of refusing a --max-model-len above
    # the model's maximum (``vllm.model_len``).
    allow_long_max_model_len: bool = False
    # --disable-sliding-window: vLLM caps the model's maximum length at the window (``vllm.model_len``).
    disable_sliding_window: bool = False
    async_scheduling: bool | None = None  # --(no-)async-scheduling; None: the release's default (``in_flight``)
    # --enable-prefix-caching: 0.5.5-0.6.0's V0 then keeps chunked prefill off by default (``chunked.v0_default``).
    enable_prefix_caching: bool = False
    # --enable-expert-parallel: an MoE's experts are distributed whole over the TP ranks (``block_split``)
    enable_expert_parallel: bool = False
    # --limit-mm-per-prompt as sorted (modality, count) pairs; empty = vLLM's defaults. A 0 takes the modality out of
    # the encoder profile (``encoder.qwen3_vl_encoder_cache_gib``).
    mm_limits: tuple[tuple[str, int], ...] = ()
    # The checkpoint's image processor's largest image in pixels (preprocessor_config.json ``size.longest_edge``, or
    # the legacy ``max_pixels``): vLLM sizes its dummy profile image from it (``encoder.qwen3_vl_image_tokens``).
    # None = the official processor's (a checkpoint that ships a smaller one profiles more, smaller images).
    image_max_pixels: int | None = None
    # --kv-cache-memory-bytes / --num-gpu-blocks-override: the flag, not the budget, sizes the cache (``pinned``)
    kv_cache_memory_bytes: int | None = None
    num_gpu_blocks_override: int | None = None
    unmodelled: str | None = None  # why a flag (LoRA, speculative decoding) makes ``estimate`` unknown (``unmodelled``)
    # The container's env: VLLM_USE_V1 as vLLM's process reads it (None: unset), or why it cannot be read; it selects
    # the engine on 0.6.5-0.11.0 (``vllm.engine_env``).
    vllm_use_v1: str | None = None
    vllm_use_v1_unreadable: str | None = None
    # VLLM_USE_FLASHINFER_SAMPLER likewise: whether V1's sampler takes FlashInfer's kernel (``vllm.sampler_env``).
    flashinfer_sampler_env: str | None = None
    flashinfer_sampler_env_unreadable: str | None = None
    # VLLM_USE_V2_MODEL_RUNNER likewise: a set value overrides the release's runner default (``vllm.runner_env``).
    runner_v2_env: str | None = None
    runner_v2_env_unreadable: str | None = None
    # VLLM_MLA_DISABLE likewise: set true, an MLA model caches full K/V per head (``vllm.mla_env``, ``mla_release``).
    mla_disable_env: str | None = None
    mla_disable_env_unreadable: str | None = None

    def __post_init__(self) -> None:
        u = self.gpu_memory_utilization  # 0 and below are vLLM's to size (no cache blocks) until 0.12's Field(gt=0)
        if not (math.isfinite(u) and u <= 1 and (u > 0 or rules(self.version).version < FIELDS_SINCE)):
            raise UserError(f"gpu-memory-utilization: {u} is out of range; expected 0 < U <= 1")
        if self.tp < 1:
            raise UserError(f"tensor-parallel-size: {self.tp} must be >= 1")
        if self.pp < 1:
            raise UserError(f"pipeline-parallel-size: {self.pp} must be >= 1")
        for key, value in (
            ("max-num-seqs", self.max_num_seqs),
            ("max-num-batched-tokens", self.max_num_batched_tokens),
            ("block-size", self.block_size),
            ("max-cudagraph-capture-size", self.cudagraph_capture_size),
            ("image-max-pixels", self.image_max_pixels),
        ):
            if value is not None and value <= 0:
                raise UserError(f"{key}: {value} must be a positive integer")
        if self.max_model_len is not None and self.max_model_len <= 0 and self.max_model_len != -1:
            raise UserError(f"max-model-len: {self.max_model_len} must be a positive integer (or auto)")
        if self.kv_cache_dtype not in KV_DTYPES:
            raise UserError(f"kv-cache-dtype: {self.kv_cache_dtype!r} is not one of {', '.join(sorted(KV_DTYPES))}")
        if self.dtype not in DTYPES:
            raise UserError(f"dtype: {self.dtype!r} is not one of {', '.join(sorted(DTYPES))}")
        if self.other_process_gib < 0:
            raise UserError(f"other-process-gib: {self.other_process_gib} must be >= 0")

    @classmethod
    def from_flags(cls, flags: Mapping[str, str], version: str | None,
                   inputs: Mapping[str, str] | None = None, hidden: Sequence[str] = ()) -> EngineSettings:
        """Typed settings from canonical dash-named vLLM flags (``{"max-model-len": "16384"}``) and the model's own
        inputs (``MODEL_INPUTS``, never read from a command line: vLLM refuses them as unrecognized arguments, so
        one typed into a container's args is refused here too); other unknown flags are ignored (they do not move
        the budget). ``hidden``: the command's arguments taken from variables (``ServerCommand.hidden``), which may
        carry flags not in ``flags``, so the estimate is unknown."""
        norm = {_normalise(k): v for k, v in flags.items()}
        if why := manifest_flags_file.unread(norm):  # any memory flag may be in vLLM's --config file
            raise UserError(why)
        if stray := sorted(k for k in norm if k in MODEL_INPUTS):
            raise UserError("unrecognized arguments: " + " ".join(f"--{k}" for k in stray))
        given = {_normalise(k): v for k, v in (inputs or {}).items()}
        if unknown := sorted(k for k in given if k not in MODEL_INPUTS):
            raise ValueError(f"not memory-model inputs: {unknown}")
        kwargs: dict[str, object] = {"version": version}
        if "tensor-parallel-size" in norm:
            kwargs["tp"] = read_int(norm, "tensor-parallel-size", version)
        if "pipeline-parallel-size" in norm:
            kwargs["pp"] = read_int(norm, "pipeline-parallel-size", version)
        if "gpu-memory-utilization" in norm:
            kwargs["gpu_memory_utilization"] = read_float(norm, "gpu-memory-utilization")
        else:  # the running release's own default (0.92 at 0.27), not this class's 0.9
            kwargs["gpu_memory_utilization"] = rules(version).default_gpu_memory_utilization
        if "max-model-len" in norm:
            raw = str(norm["max-model-len"]).strip().lower()
            kwargs["max_model_len"] = -1 if raw in ("auto", "-1") else read_int(norm, "max-model-len", version)
            known = parse_version(version)
            if raw in ("auto", "-1") and known is not None and known < AUTO_MAX_MODEL_LEN_SINCE:
                raise UserError(f"max-model-len: {raw} needs vLLM {'.'.join(map(str, AUTO_MAX_MODEL_LEN_SINCE))} or "
                                f"newer (auto-fit, vllm#29431); vLLM {version} refuses it")
        for flag, field in (("max-num-seqs", "max_num_seqs"), ("max-num-batched-tokens", "max_num_batched_tokens"),
                            ("block-size", "block_size")):
            if flag in norm:
                kwargs[field] = read_int(norm, flag, version)
        for flag, field in (("kv-cache-dtype", "kv_cache_dtype"), ("dtype", "dtype")):
            if flag in norm:
                kwargs[field] = str(norm[flag]).strip().lower()
        if norm.get("load-format"):
            kwargs["load_format"] = str(norm["load-format"]).strip().lower()
        # "None" reaches here only where argparse took it, and its type (nullable_str, optional_type) made it None
        if norm.get("quantization") and str(norm["quantization"]).strip() != "None":
            # 0.13.0+: ModelConfig refuses a name it has no method for (config_values)
            kwargs["quantization"] = quantization(str(norm["quantization"]), version)
        for flag, field in (("enforce-eager", "enforce_eager"), ("disable-sliding-window", "disable_sliding_window"),
                            ("enable-chunked-prefill", "enable_chunked_prefill"),
                            ("enable-prefix-caching", "enable_prefix_caching"),
                            ("enable-expert-parallel", "enable_expert_parallel")):
            if flag in norm:
                kwargs[field] = read_bool(norm, flag)
        if "no-enable-chunked-prefill" in norm and read_bool(norm, "no-enable-chunked-prefill"):
            kwargs["enable_chunked_prefill"] = False
        if norm.get("limit-mm-per-prompt"):
            kwargs["mm_limits"] = read_mm_limits(str(norm["limit-mm-per-prompt"]))
        if "other-process-gib" in given:
            kwargs["other_process_gib"] = read_float(given, "other-process-gib")
        if "flashinfer" in given:
            kwargs["flashinfer"] = read_bool(given, "flashinfer")
        if "compile-cache-warm" in given:
            kwargs["compile_cache_warm"] = read_bool(given, "compile-cache-warm")
        if "p2p" in given and str(given["p2p"]).strip().lower() not in _UNKNOWN:
            kwargs["p2p"] = read_bool(given, "p2p")
        if "wsl" in given:
            kwargs["wsl"] = read_bool(given, "wsl")
        if "allow-long-max-model-len" in given:
            kwargs["allow_long_max_model_len"] = read_bool(given, "allow-long-max-model-len")
        for _, text, unreadable, field in engine_env.VARIABLES:  # the env's text as vLLM reads it ("0", " 1", "true")
            if text in given:
                kwargs[field] = str(given[text])
            elif given.get(unreadable):  # a typed value wins over the pod's unreadable one
                kwargs[f"{field}_unreadable"] = str(given[unreadable])
        if given.get("image-max-pixels"):  # our input, not a vLLM flag: a plain integer
            pixels = parse_int(str(given["image-max-pixels"]))
            if pixels is None:
                raise UserError(f"image-max-pixels: {given['image-max-pixels']!r} is not an integer")
            kwargs["image_max_pixels"] = pixels
        if norm.get("mm-processor-kwargs") and (cap := mm_processor_max_pixels(str(norm["mm-processor-kwargs"]))):
            kwargs["image_max_pixels"] = cap  # the flag overrides the checkpoint's processor, as in vLLM
        size = read_capture_size(norm, version)
        if size is not None:
            kwargs["cudagraph_capture_size"] = size
        kwargs.update(compilation_settings(norm, version))
        kwargs.update(async_flag(norm))
        kwargs.update(pin_flags(norm, rules(version), lambda key: read_int(norm, key, version)))
        kwargs["unmodelled"] = unmodelled(norm, hidden)
        return checked(lambda: cls(**kwargs), norm, version)  # type: ignore[arg-type]  # config_refused, in vLLM's words


def _normalise(key: str) -> str:
    """The parser's canonical name, except a negated ``no-x`` key, which stays negated (its value is inverted
    below) instead of collapsing onto ``x``."""
    bare = key.lstrip("-").replace("_", "-")
    return bare if bare.startswith("no-") else canonical_key(key)


def resolve(model: ModelSpec, gpu: GpuSpec, s: EngineSettings) -> Resolved:
    """Apply vLLM's defaults for this version, model and GPU; reject impossible TP splits."""
    model = model.at(rules(s.version).version, s.quantization)  # what this release reads (ModelSpec.releases)
    engine, engine_why = engine_rules(s, gpu, model)
    r = rules_without_extensible_cache(engine, s)
    if problem := tp_split_problem(model, s.tp, split_run(model, gpu, s)):
        raise UserError(problem)
    auto_len = s.max_model_len == -1
    max_len = model.max_model_len if s.max_model_len in (None, -1) else int(s.max_model_len)
    if s.max_model_len is None and model.sliding_window and gemma2_cap.forced(model, r.version):
        max_len = min(max_len, model.sliding_window)  # the default, capped at the window (``gemma2_cap``)
    mla_off, mla_why = mla_env.disabled(r.version, model.is_mla, s.mla_disable_env, s.mla_disable_env_unreadable)
    mla = runs_mla(model, r.version, s.quantization or model.quantization, mla_off)
    if r.engine == "V1":
        default_mnbt, default_seqs = r.scheduler_defaults(gpu.total_gib, gpu.product, gpu.capability)
        chunked = chunked_prefill(r.engine, r.version, model, s.enable_chunked_prefill, max_len,
                                  s.disable_sliding_window, s.enable_prefix_caching, mla)
        mnbt = s.max_num_batched_tokens or (default_mnbt if chunked else max(max_len, default_mnbt))
        seqs = s.max_num_seqs or default_seqs
    else:
        chunked = chunked_prefill(r.engine, r.version, model, s.enable_chunked_prefill, max_len,
                                  s.disable_sliding_window, s.enable_prefix_caching, mla)
        mnbt = s.max_num_batched_tokens or v0_default_batch(model, r.version, chunked, max_len, r.chunked_prefill_mnbt)
        seqs = s.max_num_seqs or 256
    dtype = dtype_support.resolved(model.dtype, s.dtype, gpu.capability, s.version, model.model_types)
    weight_bytes = 4 if dtype == "float32" else 2
    kv_dtype, kv_why = kv_auto.resolved(s.kv_cache_dtype, model.kv_quant, r.version)  # auto: a ModelOpt KV scheme
    if kv_why is not None:
        raise CannotPredict(kv_why)
    kv_bytes = 1 if kv_dtype.startswith("fp8") else weight_bytes
    cache_dtype, dtype_why = mla_cache_dtype(model, r.version, gpu.capability, kv_dtype) if mla else (kv_dtype, None)
    block, block_why = (mla_block_size(model, mla, r.version, gpu.capability, s.block_size, cache_dtype) if mla
                        else attn_block_size(model, r.version, gpu.capability, s.block_size, kv_dtype,
                                             s.flashinfer, dtype))
    sampler, sampler_why = sampler_env.sampler(r, gpu.capability, s.flashinfer, s.flashinfer_sampler_env,
                                               s.flashinfer_sampler_env_unreadable)
    runner, runner_why = runner_env.runner_v2(r, runs_runner_v2(r, model), s.runner_v2_env, s.runner_v2_env_unreadable)
    return Resolved(
        rules=r,
        tp=s.tp,
        util=s.gpu_memory_utilization,
        max_model_len=max_len,
        auto_len=auto_len,
        max_num_seqs=seqs,
        mnbt=mnbt,
        chunked_prefill=chunked,
        weight_dtype_bytes=weight_bytes,
        kv_dtype_bytes=kv_bytes,
        kv_cache_dtype=kv_dtype,
        block_size=block,
        enforce_eager=s.enforce_eager or (r.engine == "V1" and s.compile_off),  # -O0: no compile, no graphs
        other_process_gib=s.other_process_gib,
        # V0 reads only the config's sizes (``capture.v0_capture_sizes``), not --cuda-graph-sizes
        capture_size=s.cudagraph_capture_size if r.engine == "V1" or s.capture_sizes_in_config else None,
        flashinfer_sampler=sampler,
        runner_v2=runner,
        in_flight_batches=batches(r.version, async_scheduling(r.version, s.async_scheduling), s.pp, runner),
        compile_cache_warm=s.compile_cache_warm,
        p2p=s.p2p,
        mm_limits=s.mm_limits,
        image_max_pixels=s.image_max_pixels,
        dtype=dtype,
        kv_cache_memory_bytes=s.kv_cache_memory_bytes,
        num_gpu_blocks_override=s.num_gpu_blocks_override,
        # and pipeline stages, which are not sized either: estimate's "cannot predict" after the config-time refusals
        env_problem=engine_why or sampler_why or runner_why or mla_why or pipeline_unmodelled(s.pp),
        cudagraphs_off=r.engine == "V1" and s.cudagraphs_off,  # V0 captures whatever the compilation config says
        mla=mla,
        mla_cache_dtype=cache_dtype,
        mla_unknown=dtype_why or block_why or (mla_alignment_unknown(model, r.version, r.engine, kv_bytes, weight_bytes)
                                               if mla else None),
    )


def engine_rules(s: EngineSettings, gpu: GpuSpec, model: ModelSpec | None = None) -> tuple[VersionRules, str | None]:
    """The version's rules on this card with the env's VLLM_USE_V1, the KV cache dtype and the model's dtype and
    attention (the V1 oracle's fallbacks, ``vllm.v1_oracle``), and why VLLM_USE_V1 makes the start unknown
    (``engine_env.engine_rules``). Without the model, ``--dtype`` as typed and no MLA."""
    dtype = (dtype_support.resolved(model.dtype, s.dtype, gpu.capability, s.version, model.model_types)
             if model is not None else dtype_support.requested(s.dtype))
    return engine_env.engine_rules(s.version, gpu.capability, s.vllm_use_v1, s.vllm_use_v1_unreadable,
                                   s.kv_cache_dtype, dtype, model is not None and _oracle_mla(model, s))


def _oracle_mla(model: ModelSpec, s: EngineSettings) -> bool:
    """``model_config.use_mla`` as the V1 oracle reads it (``is_kv_cache_dtype_supported``, platforms/cuda.py@0.10.2):
    off under VLLM_MLA_DISABLE. The oracle runs on 0.8.0-0.10.2 only, where ``use_mla`` has no quantization gate
    (config.py@0.8.5, config/__init__.py@0.10.2), so the gate of 0.7.1/0.7.2 (``runs_mla``) is not asked here."""
    off, _ = mla_env.disabled(rules(s.version).version, model.is_mla, s.mla_disable_env, s.mla_disable_env_unreadable)
    return model.is_mla and not off


def split_run(model: ModelSpec, gpu: GpuSpec, s: EngineSettings) -> SplitRun:
    """What a GPTQ-style layer's kernel choice reads of this start (``mp_split.SplitRun``)."""
    run = dtype_support.resolved(model.dtype, s.dtype, gpu.capability, s.version, model.model_types)
    return SplitRun(gpu.capability, run, rules(s.version).version, s.enable_expert_parallel)


def runs_runner_v2(r: VersionRules, model: ModelSpec) -> bool:
    """Whether this release runs the model on Model Runner V2 by default (``runner_v2.runner_v2_by_default``)."""
    return runner_v2_by_default(r, model.architecture, is_moe=model.is_moe, quantized=model.quantized_checkpoint)
