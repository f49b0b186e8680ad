"""vLLM versions: parse them from image tags, and the memory rules and defaults each one applies.

The budget formula, the engine (V0/V1) and the scheduler defaults changed several times between
0.6 and 0.2x; predicting a start means applying the rules of the version that will run. Facts are
read from each release's source (worker.py, v1/worker/gpu_worker.py, engine/arg_utils.py, envs.py).
Unknown versions (``:latest``, digests, custom tags) get the rules of the newest release known here
(``NEWEST_RELEASE``: what ``:latest`` most likely runs); a version newer than the newest whose rules were read from
its source (``NEWEST_MODELLED``) is *extrapolated* from them, and every output says so (``label``, ``provenance``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import cache
from typing import Literal

Engine = Literal["V0", "V1"]
Budget = Literal["absolute", "increase"]

NEWEST_MODELLED = (0, 21, 0)
# The oldest release the rules are read for (the calibration logs start at 0.6.4); an older one gets 0.6's rules,
# labelled as extrapolated like a newer one.
OLDEST_MODELLED = (0, 6, 0)
# The newest vLLM release known here (0.30.0, 2026-09-22): an unknown version gets its rules, which include the
# version facts modelled past NEWEST_MODELLED (Model Runner V2, batch-token and utilization defaults).
NEWEST_RELEASE = (0, 30, 0)
# The first release known to default --gpu-memory-utilization to 0.92: a 0.22.1 log with the flag unset prints "The
# current --gpu-memory-utilization=0.9200" (NnamdiOdozi/mlops-assignment, found by the fresh calibration batch of
# 2026-12-05), and vllm/config/cache.py:68 at tag v0.27.1 reads `Field(default=0.92, gt=0, le=1)`. 0.19.1 logs still
# print 0.9; 0.20-0.22.0 are not pinned down and keep 0.9: less KV cache predicted (the safe side for the KV
# checks), though the free-memory check would be the stricter with 0.92.
DEFAULT_UTIL_092_SINCE = (0, 22, 1)
# The V1 sampler stops taking FlashInfer by default (VLLM_USE_FLASHINFER_SAMPLER=1 to opt in).
FLASHINFER_SAMPLER_OPT_IN_SINCE = (0, 11, 1)
# Model Runner V2 (v1/worker/gpu/model_runner.py) is the default, by the release notes, for Llama and Mistral dense
# models at 0.23.0 (Qwen3 dense earlier: a 0.22.0 Qwen3-8B log prints "Using V2 Model Runner", trietnguyeminh's
# 2 x T4 start in the calibration set; 0.22.0 is the earliest known), for their quantized checkpoints at 0.24.0, for
# every dense model at 0.25.0 (vllm#44443) and for every model at 0.29.0 (vllm#53183).
MRV2_FAMILIES = frozenset({"LlamaForCausalLM", "MistralForCausalLM", "Qwen3ForCausalLM"})
MRV2_FAMILIES_SINCE = (0, 23, 0)
MRV2_QWEN3_SINCE = (0, 22, 0)
MRV2_FAMILIES_QUANTIZED_SINCE = (0, 24, 0)
MRV2_DENSE_SINCE = (0, 25, 0)
MRV2_ALL_SINCE = (0, 29, 0)
# `vllm serve`'s batch-token default on cards below the "big" class: 2048 through 0.11 (logged by the 0.10/0.11 A100 and
# L4 starts), 8192 by 0.27.1 (an RTX 4090 logs "Chunked prefill is enabled with max_num_batched_tokens=8192"; the 0.26.0
# RTX 4080 and 0.30.0 T4 profiles agree). The release that changed it is not pinned down: 0.26.0 is the earliest known.
SERVE_MNBT_8192_SINCE = (0, 26, 0)
# The big-card default went 8192 -> 16384 (vllm#51726, "when gpu memory is enough"; 0.28.0 release notes).
BIG_MNBT_16384_SINCE = (0, 28, 0)
_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?(?:\.?(post\d+|rc\d+|dev\d*))?")


def parse_version(text: str | None) -> tuple[int, int, int] | None:
    """``"0.8.5"``, ``"v0.8.5.post1"`` → (0, 8, 5); anything unparseable → None."""
    if not text:
        return None
    match = _VERSION.match(text.strip())
    if not match:
        return None
    return int(match.group(1)), int(match.group(2)), int(match.group(3) or 0)


# A whole version as typed: 0.8.5, v0.8.5, 0.10.1.1, 0.8.5.post1, 0.26.1rc1, 0.26.1rc1.dev156+g0eec856cc.
_TYPED_VERSION = re.compile(
    r"v?\d+\.\d+(?:\.\d+){0,2}(?:[.-]?(?:a|b|rc)\d+)?(?:[.-]?post\d+)?(?:[.-]?dev\d*)?(?:\+[A-Za-z0-9.]+)?")


def typed_version(text: str) -> str:
    """A version typed by a person (``--vllm-version``), checked whole; ValueError names what is wrong.

    :func:`parse_version` reads a prefix on purpose (log banners and tags carry suffixes), so on its own it would
    size ``0.3O.0`` (a letter O) as 0.3.0 and quietly treat ``foo`` as unknown: typed input must match entirely.
    """
    stripped = text.strip()
    if not _TYPED_VERSION.fullmatch(stripped):
        raise ValueError(f"{text!r} is not a vLLM version (e.g. 0.8.5, v0.10.1.1, 0.8.5.post1, 0.26.1rc1)")
    return stripped


def version_from_image(image: str) -> str | None:
    """The vLLM version an image runs, from its tag: ``vllm/vllm-openai:v0.8.5`` → ``"0.8.5"``.

    ``:latest``, ``:nightly``, digests and tags without a version give None (unknown). So do numbered tags whose
    major is not 0: every vLLM release is 0.x (0.30 as of December 2026), so ``rhaiis/vllm-cuda-rhel9:3.0.0`` (a
    product's own release), ``tritonserver:24.05-vllm-python-py3`` or ``myorg/vllm:2024.11`` (dates) number something
    else; reading them as vLLM 3.0.0 or 24.5.0 would size the start by rules that release never had.
    """
    ref = image.strip().split("@", 1)[0]
    name, _, tag = ref.rpartition(":")
    if not name or "/" in tag:  # no tag, or the colon was a registry port
        return None
    match = _VERSION.match(tag)
    if not match or int(match.group(1)) != 0:
        return None
    version = f"{match.group(1)}.{match.group(2)}.{match.group(3) or 0}"
    return version + (f".{match.group(4)}" if match.group(4) and match.group(4).startswith("post") else "")


@dataclass(frozen=True)
class VersionRules:
    """What one vLLM release does at startup, as far as memory is concerned."""

    version: tuple[int, int, int]
    known: bool
    engine: Engine
    # absolute: budget = T·u − (torch peak incl. weights + everything else on the device, CUDA context and
    # other processes included); increase: T·u − (weights + peak increase + non-torch increase) over a
    # snapshot taken at startup, so other processes only matter through the free-memory check.
    budget: Budget
    free_memory_check: bool  # V1 ≥0.9.1 refuses to start when free < T·u
    cudagraph_in_budget: bool  # ≥0.20 subtracts a CUDA-graph estimate from the KV budget
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
    # v0.11.2, v0.13.0, v0.16.0). Whether FlashInfer imports is the install's business (an optional extra,
    # `vllm[flashinfer]`, up to 0.11.0), so it is an input (``EngineSettings.flashinfer``), not assumed.
    flashinfer_sampler_by_default: bool = False
    # `--gpu-memory-utilization` when the flag is absent: CacheConfig's default, 0.9, later 0.92
    # (`Field(default=0.92, gt=0, le=1)`, vllm/config/cache.py:68 at tag v0.27.1, commit 6e448d0; a 0.27.1 log
    # with the flag unset prints "Desired GPU memory utilization is (0.92, ...)").
    default_gpu_memory_utilization: float = 0.9

    @property
    def extrapolated(self) -> bool:
        """A release outside the modelled ones: its rules are the nearest modelled release's, not read from its
        source."""
        return self.known and not OLDEST_MODELLED[:2] <= self.version[:2] <= NEWEST_MODELLED[:2]

    @property
    def provenance(self) -> str:
        """Where the rules come from: ``modelled``, ``extrapolated from 0.21`` or, for an unknown version, the newest
        release's rules and how they were made."""
        if not self.known:
            return f"rules of {_minor(NEWEST_RELEASE)}, extrapolated from {_minor(NEWEST_MODELLED)}; version unknown"
        if not self.extrapolated:
            return "modelled"
        return f"extrapolated from {_minor(OLDEST_MODELLED if self.version < OLDEST_MODELLED else NEWEST_MODELLED)}"

    @property
    def label(self) -> str:
        """The version as every output prints it; never a bare number unless its rules were modelled."""
        if not self.known:
            return f"unknown (rules of {_minor(NEWEST_RELEASE)}, extrapolated from {_minor(NEWEST_MODELLED)})"
        text = ".".join(map(str, self.version))
        return f"{text} (rules: {self.provenance})" if self.extrapolated else text

    def scheduler_defaults(self, gpu_total_gib: float, gpu_product: str) -> tuple[int, int]:
        """``vllm serve`` defaults (max_num_batched_tokens, max_num_seqs) for the V1 engine on this GPU."""
        if self.version < (0, 8, 3):
            return 2048, 1024 if self.engine == "V1" else 256
        product = gpu_product.lower()
        if self.version < (0, 8, 5):  # 0.8.3-0.8.4 decide by device name (engine/arg_utils.py)
            big = "h100" in product or "h200" in product
        else:  # 0.8.5: >= 70 GiB of device memory; 0.9.0+ excludes A100s
            big = gpu_total_gib >= 70 and not (self.version >= (0, 9, 0) and "a100" in product)
        if big:
            return (16384 if self.version >= BIG_MNBT_16384_SINCE else 8192), 1024
        return (8192 if self.version >= SERVE_MNBT_8192_SINCE else 2048), 256


def _minor(version: tuple[int, int, int]) -> str:
    return f"{version[0]}.{version[1]}"


@cache
def rules(version: str | None) -> VersionRules:
    """The rules for a version string (None or unparseable → the newest release known here)."""
    parsed = parse_version(version)
    known = parsed is not None
    v = parsed or NEWEST_RELEASE
    engine: Engine = "V1" if v >= (0, 8, 0) else "V0"
    if engine == "V0":
        budget: Budget = "absolute" if v < (0, 6, 5) else "increase"
    else:
        budget = "absolute" if v < (0, 9, 1) else "increase"
    return VersionRules(
        version=v,
        known=known,
        engine=engine,
        budget=budget,
        free_memory_check=engine == "V1" and v >= (0, 9, 1),
        cudagraph_in_budget=v >= (0, 20, 0),
        chunked_prefill_mnbt=512 if v < (0, 6, 5) else 2048,
        suggests_max_len=engine == "V1" and v >= (0, 8, 5),
        sampler_sorts=engine == "V1" and v < (0, 17, 0),
        flashinfer_sampler_by_default=engine == "V1" and v < FLASHINFER_SAMPLER_OPT_IN_SINCE,
        default_gpu_memory_utilization=0.92 if v >= DEFAULT_UTIL_092_SINCE else 0.9,
    )


def rules_on_device(version: str | None, capability: tuple[int, int] | None) -> VersionRules:
    """The version's rules on a GPU of this compute capability. 0.8-0.9 run V1 by default but fall back to V0 below
    compute capability 8.0 (engine/arg_utils.py `_is_v1_supported_oracle`; the log says "Compute Capability < 8.0 is
    not supported by the V1 Engine. Falling back to V0."), with V0's "increase" budget and no free-memory check.
    An unknown capability (None) is taken as a card V1 runs on."""
    r = rules(version)
    if capability is not None and r.engine == "V1" and r.version < (0, 10, 0) and capability < (8, 0):
        return replace(r, engine="V0", budget="increase", free_memory_check=False, suggests_max_len=False,
                       sampler_sorts=False, flashinfer_sampler_by_default=False)
    return r
