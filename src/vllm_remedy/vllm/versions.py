"""vLLM versions: parse them from image tags, and the memory rules and defaults each one applies.

The budget formula, the engine (V0/V1) and the scheduler defaults changed several times between
0.5 and 0.3x; predicting a start means applying the rules of the version that will run. Facts are
read from each release's source (worker.py, v1/worker/gpu_worker.py, engine/arg_utils.py, envs.py).
Unknown versions (``:latest``, digests, custom tags) get the rules of the newest release known here
(``NEWEST_RELEASE``: what ``:latest`` most likely runs), and every output says the version is unknown; a release
whose source was not read (newer than ``NEWEST_MODELLED``, older than ``OLDEST_MODELLED``, or a patch past the last one
read of its minor, ``LAST_READ_PATCH``) is *extrapolated* from the nearest one read, and every output says so too
(``label``, ``provenance``; which releases were read, and that wording, are ``version_labels``'). A pre-release
build (0.6.4.dev0, 0.26.1rc1) comes before its release (PEP 440): it gets the previous release's rules, extrapolated,
and no gate of the release it precedes (``parse_version``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Literal

from vllm_remedy.vllm import v1_oracle
from vllm_remedy.vllm.version_labels import LAST_READ_PATCH, NEWEST_RELEASE, Labelled

Engine = Literal["V0", "V1"]
Budget = Literal["absolute", "increase"]

# CacheConfig.gpu_memory_utilization defaults to 0.92 from 0.20.0 (`Field(default=0.92, gt=0, le=1)`,
# config/cache.py@0.20.0; 0.9 in config/cache.py@0.19.1; EngineArgs takes CacheConfig's value, engine/arg_utils.py).
# It was 0.22.1, the earliest log known to print it (NnamdiOdozi/mlops-assignment's "--gpu-memory-utilization=0.9200").
# From 0.34.0 the field is None when unset and resolves to 1.0 with the extensible KV cache, 0.92 without it
# (CacheConfig.resolved_gpu_memory_utilization, config/cache.py@0.34.0); the extensible cache is on by default there
# (``kv_sized_after_warmup``), so the default is 1.0.
DEFAULT_UTIL_092_SINCE = (0, 20, 0)
# The V1 sampler stops taking FlashInfer by default (VLLM_USE_FLASHINFER_SAMPLER=1 to opt in) ...
FLASHINFER_SAMPLER_OPT_IN_SINCE = (0, 11, 1)
# ... and takes it by default again from 0.21.0: envs.py@0.21.0 defaults VLLM_USE_FLASHINFER_SAMPLER to True (None,
# i.e. off, in envs.py@0.20.0) and v1/sample/ops/topk_topp_sampler.py@0.21.0 uses FlashInfer's kernel when the GPU's
# capability is one FlashInfer supports, falling back quietly otherwise. (Not 0.28 as the release notes suggested.)
FLASHINFER_SAMPLER_DEFAULT_AGAIN_SINCE = (0, 21, 0)
# FlashInferBackend.supports_compute_capability (v1/attention/backends/flashinfer.py): 7.5-12.1, from 0.24.0 8.0-12.1
# (Turing excluded: flashinfer#3620). The sampler's default-on path checks it (the T4 0.30.0 log: "FlashInfer
# top-p/top-k sampling unavailable: unsupported compute capability 7.5; falling back").
FLASHINFER_MIN_CAPABILITY_80_SINCE = (0, 24, 0)
# V2's profile_cudagraph_memory returns 0 through 0.28 ("It is TBD whether we keep this API or not",
# v1/worker/gpu/model_runner.py@0.28.0); from 0.29.0 it captures the graphs once into a throwaway pool before the KV
# cache exists and the worker subtracts that estimate from the budget, as it does V1's from 0.20
# (v1/worker/gpu/cudagraph_utils.py@0.29.0 profile_cudagraph_memory: PIECEWISE graphs measured in full, FULL graphs
# as first capture + (n - 1) x max(second capture, 1 MiB)). A T4 0.30.0 log: "0.15 GiB (actual), 0.34 GiB (estimated)".
MRV2_GRAPHS_IN_BUDGET_SINCE = (0, 29, 0)
# V2's profile samples twice from 0.33.0: the default pass, then one with SamplingParams.for_sampler_warmup() (top-k
# 50, top-p 0.9, min-p, penalties, logit bias, logprobs 5) on the same min(max_num_seqs, mnbt) rows, so the profiled
# peak pays for the float32 logits pipeline (_dummy_sampler_run, v1/worker/gpu/model_runner.py@0.33.0); before, the
# dummy sampler "may skip top_k, top_p, and logprobs".
MRV2_FULL_SAMPLER_PROFILE_SINCE = (0, 33, 0)
# check_enough_kv_cache_memory holds back the null block the BlockPool keeps: one max-length request must fit in the
# budget less one block (v1/core/kv_cache_utils.py@0.29.0).
MAX_LEN_CHECK_NULL_BLOCK_SINCE = (0, 29, 0)
# The extensible KV cache (config/cache.py, v1/worker/extensible_kv_cache.py@0.34.0): on by default on CUDA unless
# --kv-cache-memory-bytes or --num-gpu-blocks-override is set (VllmConfig._resolve_extensible_kv_cache). The cache is
# sized after warmup and graph capture from measured free memory, and the startup free-memory check is skipped.
EXTENSIBLE_KV_CACHE_SINCE = (0, 34, 0)
# `vllm serve` (UsageContext.OPENAI_API_SERVER) batch-token defaults, EngineArgs.get_batch_defaults
# (engine/arg_utils.py): cards below 70 GiB (and A100s from 0.9.0) 2048 tokens / 256 sequences in every release read
# (0.21.0-0.34.0); 70 GiB and up 8192 / 1024; from 0.28.0 cards of 160 GiB and up (B200 class) 16384 / 1024
# (arg_utils.py@0.28.0); from 0.33.0 a GB10 (capability 12.1) stays in the small class (arg_utils.py@0.33.0). The
# offline `LLM()` class defaults to 8192 below 70 GiB and 16384 above: the RTX 4090 0.27.1 log that prints
# "max_num_batched_tokens=8192" is an `LLM()` run, so it is not evidence of a serve default (which the model had
# taken from it, as 8192 from 0.26.0).
BIG_MNBT_16384_MIN_GIB = 160
BIG_MNBT_16384_SINCE = (0, 28, 0)
GB10_SMALL_CLASS_SINCE = (0, 33, 0)
# V0's KV budget by release (worker/worker.py ``determine_num_available_blocks`` and ``init_device``):
# 0.5.5-0.6.3  T x u - (free memory at ``init_device``, taken after the CUDA context and before the distributed setup,
#              less free memory after ``profile_run``, before any ``empty_cache``): what the instance added since then,
#              so neither the CUDA context nor other processes are charged ("increase"; read at 0.5.5, 0.6.0, 0.6.1,
#              0.6.2, 0.6.3). The torch part is the caching allocator's reserved memory after the profile, not the
#              allocated peak the model sizes: fragmentation above the peak is charged there and not modelled.
# 0.6.4        T x u - (torch's allocated peak + everything else in use on the device, context and other processes
#              included) ("absolute", worker.py@0.6.4);
# 0.6.5-0.7    T x u - (weights + torch peak increase + non-torch increase over the ``init_device`` baseline)
#              ("increase", ``memory_profiling``, utils.py@0.6.5).
V0_ABSOLUTE_BUDGET = ((0, 6, 4), (0, 6, 5))
_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?(?:\.?(post\d+|rc\d+|dev\d*))?")


# A pre-release of a three-part release (0.6.4.dev0, 0.26.1rc1.dev156+g0eec856cc); not a dev of a post or four-part
# release (0.8.5.post1.dev3 and 0.10.1.1rc1 follow 0.8.5 and 0.10.1), nor a tag's ``-devel``.
_PRECEDES = re.compile(r"^v?\d+\.\d+(?:\.\d+)?(?:[.-]?(?:a|b|rc)\d+|[.-]?dev\d*)(?![A-Za-z])")


def parse_version(text: str | None) -> tuple[int, int, int] | None:
    """The release whose rules a version runs by: ``"0.8.5"``, ``"v0.8.5.post1"`` → (0, 8, 5); a pre-release, which
    PEP 440 orders before its release (0.6.4.dev0 < 0.6.4rc1 < 0.6.4), → the release before it: ``"0.6.4.dev0"`` →
    (0, 6, 3), ``"0.34.0rc2"`` → (0, 33, 0), so no gate of the release it precedes (a flag added there) applies to it;
    anything unparseable → None."""
    if not text:
        return None
    match = _VERSION.match(text.strip())
    if not match:
        return None
    release = int(match.group(1)), int(match.group(2)), int(match.group(3) or 0)
    return _preceding(release) if _PRECEDES.match(text.strip()) else release


def _preceding(release: tuple[int, int, int]) -> tuple[int, int, int]:
    """The release before ``release`` as far as the rules go: the previous patch (0.6.3 before 0.6.4), the last one read
    of the previous minor (0.33.0 before 0.34.0, 0.8.5 before 0.9.0), the newest known before a new major (1.0.0)."""
    major, minor, patch = release
    if patch:
        return major, minor, patch - 1
    if minor:
        return major, minor - 1, LAST_READ_PATCH.get((major, minor - 1), 0)
    return NEWEST_RELEASE if release > NEWEST_RELEASE else release


# A whole version as typed: 0.8.5, v0.8.5, 0.10.1.1, 0.8.5.post1, 0.26.1rc1, 0.26.1rc1.dev156+g0eec856cc.
_TYPED_VERSION = re.compile(
    r"v?\d+\.\d+(?:\.\d+){0,2}(?:[.-]?(?:a|b|rc)\d+)?(?:[.-]?post\d+)?(?:[.-]?dev\d*(?![A-Za-z]))?(?:\+[A-Za-z0-9.]+)?")


def typed_version(text: str) -> str:
    """A version typed by a person (``--vllm-version``), checked whole; ValueError names what is wrong.

    :func:`parse_version` reads a prefix on purpose (log banners and tags carry suffixes), so on its own it would
    size ``0.3O.0`` (a letter O) as 0.3.0 and quietly treat ``foo`` as unknown: typed input must match entirely.
    """
    stripped = text.strip()
    if not _TYPED_VERSION.fullmatch(stripped):
        raise ValueError(f"{text!r} is not a vLLM version (e.g. 0.8.5, v0.10.1.1, 0.8.5.post1, 0.26.1rc1)")
    return stripped


#: vLLM's own images (Docker Hub's ``vllm`` organisation, through any registry or mirror): their tags are vLLM releases.
_OWN_REPO = re.compile(r"(?:^|/)vllm/vllm-[\w.-]+$")
#: Repositories whose tags number another product that bundles vLLM: LMCache's ``lmcache/vllm-openai:v0.3.7`` is
#: LMCache 0.3.7 (vLLM never released a 0.3.7), ROCm's ``rocm/vllm`` tags lead with ROCm, Red Hat AI Inference
#: Server's ``rhaiis/…`` and NGC's ``tritonserver`` with their own releases and dates. Only a tag that names vLLM's
#: version (``vllm_0.10.1``) says which vLLM they run.
_PRODUCT_REPO = re.compile(r"(?:^|/)(?:lmcache/[\w.-]+|rocm/[\w.-]+|rhaiis/[\w.-]+|(?:[\w.-]+/)*tritonserver)$")
#: A tag naming vLLM's version beside another's: ``rocm6.4.1_vllm_0.10.1_20250909``, ``24.05-vllm-0.4.2``.
_NAMED_IN_TAG = re.compile(r"(?:^|[_.-])vllm[_-]?v?(?P<version>\d+\.\d+(?:\.\d+)?(?:\.?(?:post|rc)\d+)?)(?=$|[_+-])")


def version_from_image(image: str) -> str | None:
    """The vLLM version an image runs, from its tag as tagged: ``vllm/vllm-openai:v0.8.5`` → ``"0.8.5"``,
    ``:v0.35.0rc1`` → ``"0.35.0rc1"``, ``rocm/vllm:rocm6.4.1_vllm_0.10.1_20250909`` → ``"0.10.1"``.

    ``:latest``, ``:nightly``, digests and tags without a version give None (unknown). A version-shaped tag counts
    only where it numbers vLLM: any on vLLM's own images (``vllm/vllm-openai:v1.0.0`` is a release newer than
    modelled); none on an image that numbers another product (``lmcache/vllm-openai:v0.3.7`` is LMCache's, the
    ``_PRODUCT_REPO`` list) unless the tag names vLLM's own; on any other image a 0.x tag (a custom build tagged with
    the vLLM it packages, ``myorg/vllm:0.9.2-cu128``) but no other major: ``rhaiis/vllm-cuda-rhel9:3.0.0``,
    ``myorg/vllm:2024.11`` number something else, and reading them as vLLM 3.0.0 or 2024.11 would size the start by
    rules no release had.
    """
    ref = image.strip().split("@", 1)[0]
    name, _, tag = ref.rpartition(":")
    if not name or "/" in tag:  # no tag, or the colon was a registry port
        return None
    if (named := _NAMED_IN_TAG.search(tag)) is not None:
        return _shown(named["version"])
    if _PRODUCT_REPO.search(name):
        return None
    match = _VERSION.match(tag)
    if not match or (int(match.group(1)) != 0 and not _OWN_REPO.search(name)):
        return None
    return _shown(tag)  # as tagged, rc and post included (v0.35.0rc1 runs 0.35.0rc1, not 0.35.0)


@dataclass(frozen=True)
class VersionRules(Labelled):
    """What one vLLM release does at startup, as far as memory is concerned."""

    version: tuple[int, int, int]
    known: bool
    engine: Engine
    # absolute: budget = T·u − (torch peak incl. weights + everything else on the device, CUDA context and
    # other processes included); increase: T·u − (weights + peak increase + non-torch increase) over a
    # snapshot taken at startup, so other processes only matter through the free-memory check.
    budget: Budget
    free_memory_check: bool  # V1 ≥0.9.1 refuses to start when free < T·u (not with 0.34's extensible KV cache)
    cudagraph_in_budget: bool  # ≥0.20 subtracts the V1 runner's CUDA-graph estimate from the KV budget
    chunked_prefill_mnbt: int  # V0 default batch-token budget when chunked prefill is on
    suggests_max_len: bool  # V1 ≥0.8.5 prints "the estimated maximum model length is N"
    # V1 sampler warm-up: top-k/top-p by a full PyTorch sort of the vocab (values + int64 indices + scatter
    # copy) up to 0.16; 0.17 switched batches of >= 8 rows to a Triton kernel that does not sort
    # (v1/sample/ops/topk_topp_sampler.py). The sort roughly 2.6x the sampler's peak. Where FlashInfer is
    # installed, V1 before 0.11.1 takes FlashInfer's kernel instead (see ``flashinfer_sampler_by_default``).
    sampler_sorts: bool = False
    # V1's TopKTopPSampler takes FlashInfer's top-k/top-p kernel (no sort) whenever FlashInfer imports and
    # VLLM_USE_FLASHINFER_SAMPLER is not set to 0: "`VLLM_USE_FLASHINFER_SAMPLER is not False`", "In V1, None
    # means True" (v1/sample/ops/topk_topp_sampler.py, tags v0.10.1.1, v0.10.2, v0.11.0). From 0.11.1 it is
    # opt-in (`if envs.VLLM_USE_FLASHINFER_SAMPLER:`, "Users must opt in explicitly", same file at v0.11.1,
    # v0.11.2, v0.13.0, v0.16.0), and default-on again from 0.21.0 (``FLASHINFER_SAMPLER_DEFAULT_AGAIN_SINCE``).
    # Whether FlashInfer imports is the install's business (an optional extra, `vllm[flashinfer]`, up to 0.11.0), so
    # it is an input (``EngineSettings.flashinfer``), not assumed.
    flashinfer_sampler_by_default: bool = False
    # `--gpu-memory-utilization` when the flag is absent: CacheConfig's default, 0.9, 0.92 from 0.20.0
    # (``DEFAULT_UTIL_092_SINCE``; a 0.27.1 log with the flag unset prints "Desired GPU memory utilization is (0.92,
    # ...)"), 1.0 from 0.34.0 with the extensible KV cache (``EXTENSIBLE_KV_CACHE_SINCE``).
    default_gpu_memory_utilization: float = 0.9
    # Model Runner V2 subtracts its own CUDA-graph estimate from the budget (``MRV2_GRAPHS_IN_BUDGET_SINCE``).
    runner_v2_graphs_in_budget: bool = False
    # Model Runner V2's profile runs the full sampler pipeline (``MRV2_FULL_SAMPLER_PROFILE_SINCE``).
    runner_v2_full_sampler_profile: bool = False
    # The one-request check compares with the budget less one block (``MAX_LEN_CHECK_NULL_BLOCK_SINCE``).
    max_len_check_reserves_null_block: bool = False
    # The KV cache is sized after warmup and graph capture by default (``EXTENSIBLE_KV_CACHE_SINCE``).
    kv_sized_after_warmup: bool = False
    # The version as typed or logged (``0.35.0rc1``, ``0.10.1.1``), for display only: the rules go by ``version``.
    shown: str = field(default="", compare=False)
    # Its pre-release part (``rc2``, ``rc1.dev156``) and post-release number, which ``version`` leaves out.
    pre: str = field(default="", compare=False)
    post: int = field(default=0, compare=False)
    fourth: int = field(default=0, compare=False)  # 0.10.1.1's last number, which ``version`` leaves out too

    def scheduler_defaults(self, gpu_total_gib: float, gpu_product: str,
                           capability: tuple[int, int] | None = None) -> tuple[int, int]:
        """``vllm serve`` defaults (max_num_batched_tokens, max_num_seqs) for the V1 engine on this GPU."""
        if self.version < (0, 8, 3):
            return 2048, 1024 if self.engine == "V1" else 256
        product = gpu_product.lower()
        if self.version < (0, 8, 5):  # 0.8.3-0.8.4 decide by device name (engine/arg_utils.py)
            big = "h100" in product or "h200" in product
        else:  # 0.8.5: >= 70 GiB of device memory; 0.9.0+ excludes A100s; 0.33.0+ a GB10
            gb10 = self.version >= GB10_SMALL_CLASS_SINCE and capability == (12, 1)
            big = gpu_total_gib >= 70 and not (self.version >= (0, 9, 0) and "a100" in product) and not gb10
            if self.version >= BIG_MNBT_16384_SINCE and gpu_total_gib >= BIG_MNBT_16384_MIN_GIB:
                return 16384, 1024
        return (8192, 1024) if big else (2048, 256)


def _shown(text: str | None) -> str:
    """A version as typed or logged, without the tag's ``v`` and anything after the version (a log's ``)``)."""
    match = _TYPED_VERSION.match((text or "").strip())
    return match.group(0).removeprefix("v") if match else ""


_PRE = re.compile(r"(?:a|b|rc)\d+|dev\d*")
_POST = re.compile(r"post(\d+)")
_FOURTH = re.compile(r"\d+\.\d+\.\d+\.(\d+)")


def _pre_post(shown: str) -> tuple[str, int]:
    """(``rc1.dev156``, 0) of ``0.26.1rc1.dev156+g0eec856cc``, ("", 1) of ``0.8.5.post1``; the local part is no
    release of its own (``0.11.0+torch271`` runs 0.11.0)."""
    public = shown.partition("+")[0]
    post = _POST.search(public)
    return ".".join(_PRE.findall(public)), int(post.group(1)) if post else 0


def _fourth(shown: str) -> int:
    """1 of ``0.10.1.1``; 0 of a three-part version."""
    match = _FOURTH.match(shown)
    return int(match.group(1)) if match else 0


@cache
def rules(version: str | None) -> VersionRules:
    """The rules for a version string (None or unparseable → the newest release known here)."""
    parsed = parse_version(version)
    # A version past the newest modelled — 0.40.0 or 1.0.0, typed or tagged on vLLM's own image — is a release newer
    # than modelled, extrapolated from the newest read; only a version never named is unknown (``version_from_image``
    # names none for a tag that numbers another product).
    known = parsed is not None
    v = parsed if parsed is not None and known else NEWEST_RELEASE
    engine: Engine = "V1" if v >= (0, 8, 0) else "V0"
    if engine == "V0":
        budget: Budget = "absolute" if V0_ABSOLUTE_BUDGET[0] <= v < V0_ABSOLUTE_BUDGET[1] else "increase"
    else:
        budget = "absolute" if v < (0, 9, 1) else "increase"
    return VersionRules(
        version=v,
        known=known,
        engine=engine,
        budget=budget,
        # 0.34's extensible KV cache skips the check (request_memory, v1/worker/utils.py@0.34.0)
        free_memory_check=engine == "V1" and v >= (0, 9, 1) and v < EXTENSIBLE_KV_CACHE_SINCE,
        cudagraph_in_budget=v >= (0, 20, 0),
        chunked_prefill_mnbt=512 if v < (0, 6, 5) else 2048,
        suggests_max_len=engine == "V1" and v >= (0, 8, 5),
        sampler_sorts=engine == "V1" and v < (0, 17, 0),
        flashinfer_sampler_by_default=engine == "V1" and not (
            FLASHINFER_SAMPLER_OPT_IN_SINCE <= v < FLASHINFER_SAMPLER_DEFAULT_AGAIN_SINCE),
        default_gpu_memory_utilization=(
            1.0 if v >= EXTENSIBLE_KV_CACHE_SINCE else 0.92 if v >= DEFAULT_UTIL_092_SINCE else 0.9),
        runner_v2_graphs_in_budget=v >= MRV2_GRAPHS_IN_BUDGET_SINCE,
        runner_v2_full_sampler_profile=v >= MRV2_FULL_SAMPLER_PROFILE_SINCE,
        max_len_check_reserves_null_block=v >= MAX_LEN_CHECK_NULL_BLOCK_SINCE,
        kv_sized_after_warmup=v >= EXTENSIBLE_KV_CACHE_SINCE,
        shown=_shown(version) if known else "",
        pre=_pre_post(_shown(version))[0] if known else "",
        post=_pre_post(_shown(version))[1] if known else 0,
        fourth=_fourth(_shown(version)) if known else 0,
    )


def rules_on_device(version: str | None, capability: tuple[int, int] | None, kv_cache_dtype: str = "auto",
                    dtype: str | None = None, mla: bool = False) -> VersionRules:
    """The version's rules on a GPU of this compute capability, for this KV cache dtype, model dtype and attention.
    0.8-0.10 run V1 by default but fall back to V0 where engine/arg_utils.py `_is_v1_supported_oracle` finds a
    feature V1 lacks (``v1_oracle.fallback``: compute capability below 8.0 through 0.10.1, an fp8 KV cache where
    FlashAttention 3 does not run, float32 through 0.9.1; the log says "<feature> is not supported by the V1 Engine.
    Falling back to V0."), with V0's "increase" budget and no free-memory check.
    From 0.21 the FlashInfer sampler is on by default only where FlashInfer supports the card
    (``FLASHINFER_MIN_CAPABILITY_80_SINCE``). An unknown capability (None) is taken as a card both run on."""
    r = rules(version)
    if r.engine == "V1" and v1_oracle.fallback(r.version, capability, kv_cache_dtype, dtype, mla) is not None:
        return as_v0(r)
    again = r.version >= FLASHINFER_SAMPLER_DEFAULT_AGAIN_SINCE
    if capability is not None and r.flashinfer_sampler_by_default and again and not flashinfer_supports(r, capability):
        return replace(r, flashinfer_sampler_by_default=False)
    return r


def flashinfer_supports(r: VersionRules, capability: tuple[int, int]) -> bool:
    """``FlashInferBackend.supports_compute_capability``: 7.5-12.1, 8.0-12.1 from 0.24
    (``FLASHINFER_MIN_CAPABILITY_80_SINCE``)."""
    lowest = (8, 0) if r.version >= FLASHINFER_MIN_CAPABILITY_80_SINCE else (7, 5)
    return lowest <= capability <= (12, 1)


def as_v0(r: VersionRules) -> VersionRules:
    """A V1-default release (0.8-0.10) running its V0 engine (worker/worker.py's "increase" budget, no free-memory
    check, no max-length suggestion, V0's sampler); also what VLLM_USE_V1=0 selects (``vllm.engine_env``)."""
    return replace(r, engine="V0", budget="increase", free_memory_check=False, suggests_max_len=False,
                   sampler_sorts=False, flashinfer_sampler_by_default=False)
