"""What vLLM will run with: the settings after the version's defaults (``settings.resolve`` builds it).

Moved out of ``settings`` (which reads the flags and applies the defaults): every memory term reads this record, so it
sits below them all and needs nothing but the version's rules.
"""

from __future__ import annotations

from dataclasses import dataclass

from vllm_remedy.vllm.versions import VersionRules


@dataclass(frozen=True)
class Resolved:
    """Settings after the version's defaults: what vLLM will run with."""

    rules: VersionRules
    tp: int
    util: float
    max_model_len: int  # requested (for "auto": the model's derived length, shrunk later)
    auto_len: bool
    max_num_seqs: int
    mnbt: int
    chunked_prefill: bool
    weight_dtype_bytes: int
    kv_dtype_bytes: int
    block_size: int
    enforce_eager: bool
    other_process_gib: float
    capture_size: int | None = None  # --max-cudagraph-capture-size or its older spelling; None: the default
    flashinfer_sampler: bool = False  # the sampler warm-up runs FlashInfer's top-k/top-p kernel, not a sort
    # Model Runner V2 profiles its own way and leaves CUDA graphs out of the budget (terms.mrv2_activation_gib).
    runner_v2: bool = False
    in_flight_batches: int = 1  # batches a sliding-window group holds per request (``in_flight.batches``)
    compile_cache_warm: bool = False
    p2p: bool | None = None  # CUDA peer access between the TP ranks' GPUs; None = unknown (EngineSettings.p2p)
    mm_limits: tuple[tuple[str, int], ...] = ()  # --limit-mm-per-prompt (EngineSettings.mm_limits)
    image_max_pixels: int | None = None  # the checkpoint's image-processor cap (EngineSettings.image_max_pixels)
    # The dtype vLLM runs the model in (``dtype_support.resolved``): auto on a bfloat16 checkpoint is float16 on a card
    # below capability 8.0 from 0.9.1 (the same 2 bytes, but what vLLM's config line and the planner see).
    dtype: str = "bfloat16"
    kv_cache_memory_bytes: int | None = None  # EngineSettings.kv_cache_memory_bytes
    num_gpu_blocks_override: int | None = None  # EngineSettings.num_gpu_blocks_override
    # Why the env's engine-selecting variables make the start unknown ("cannot predict VLLM_...": refused, an engine
    # or runner not modelled, a value that cannot be read), judged with the rules above, or pipeline stages (not
    # sized: ``pipeline``); None when none of these.
    env_problem: str | None = None
    cudagraphs_off: bool = False  # --compilation-config turns V1's graphs off while it still compiles
    mla: bool = False  # the release caches this model's MLA latent (``mla_release.runs_mla``), not K/V per head
    mla_cache_dtype: str = "auto"  # the latent's cache dtype as the release converts it (``mla_cache.cache_dtype``)
    # Why the KV block size (``mla_block``, ``attn_block``) or the MLA cache dtype (``mla_cache``) is not known for this
    # release and card: "cannot predict ...", raised by ``estimate`` once the start reaches the model; None when known.
    mla_unknown: str | None = None
    kv_cache_dtype: str = "auto"  # the cache dtype vLLM runs: auto resolved from a ModelOpt KV scheme (``kv_auto``)
