"""The KV block size vLLM runs an MLA model with, by release, card and KV dtype; a block holds whole tokens, so the
cache's token count is a multiple of it (``KvLayout.tokens``). With VLLM_ATTENTION_BACKEND / --attention-backend
unset (not read by the tools). FlashMLA's extension and FlashAttention 3 are taken as built into the wheel for
capability 9.x, as vLLM's CUDA wheels build them.

- before 0.8.0: nothing forced: --block-size or 16 (platforms/cuda.py@0.7.2, @0.7.3).
- 0.8.0-0.11.x, ``CudaPlatform.check_and_update_config`` under ``model_config.use_mla``: FlashMLA's 64 on
  capability 9.x whatever --block-size says (``is_flashmla_supported``: "FlashMLA is only supported on Hopper
  devices", attention/ops/flashmla.py@0.11.0); from 0.10.2 CUTLASS MLA's 128 on capability 10.0; from 0.11.0 a
  V3.2 config (``index_topk``) forced to 64 last; other cards keep --block-size or 16 (Triton MLA)
  (platforms/cuda.py@0.8.0, @0.8.5, @0.9.2, @0.10.0, @0.10.2, @0.11.0).
- 0.12.0-0.17.x, the same method tests multiples instead (platforms/cuda.py@0.12.0 to @0.17.0):
  FlashMLA on 9.x (``is_flashmla_dense_supported``, attention/ops/flashmla.py@0.12.0) sets 64 when the size is not
  a multiple of 64; CUTLASS MLA sets 128 when not a multiple of 128, on capability 10.0 in 0.12
  (``is_device_capability(100)``), on any 10.x for a dense model from 0.13 (``is_device_capability_family(100) and
  not use_sparse``); from 0.15.0 a dense model on 10.x with ``qk_nope_head_dim == 128`` gets FlashInfer MLA
  instead, 64 unless the size is 32 or a multiple of 64; V3.2 is forced to 64 last (0.17.0: FlashMLA sparse's 64).
- from 0.18.0 ``check_and_update_config`` forces nothing; ``Platform.update_block_size_for_backend`` keeps a typed
  --block-size and otherwise takes the attention backend's ``get_preferred_block_size(DEFAULT_BLOCK_SIZE)``: the
  default when a kernel block size divides it, else the smallest kernel size (platforms/interface.py@0.18.0,
  @0.20.0, @0.31.0 ``_preferred_block_size_for_backends``, @0.34.0; v1/attention/backend.py). DEFAULT_BLOCK_SIZE is
  16, 64 from 0.34.0 (config/cache.py@0.33.0, @0.34.0). The backend is the first valid one of
  ``_get_backend_priorities`` (platforms/cuda.py@0.18.0 to @0.34.0), whose MLA entries read the same in every one
  of those releases (v1/attention/backends/mla/*.py@0.18.0, @0.24.0, @0.34.0): a dense model on 9.x takes
  FlashAttention MLA (``MultipleOf(16)``; 16-bit KV only), with an fp8 KV cache FlashMLA ([64]); on 10.x FlashInfer
  MLA ([32, 64]; ``qk_nope_head_dim`` in [64, 128], from 0.19.0 [64, 128, 192]); on any other card Triton MLA
  (``MultipleOf(16)``). V3.2 on 9.x takes a sparse backend of [64] or ``MultipleOf(64)`` (FlashMLA sparse;
  FlashAttention MLA sparse from 0.25.0, ``MultipleOf(64)`` at 0.34.0), as its indexer cache does ([64]).
  V3.2 elsewhere, and a dense model on 10.x whose ``qk_nope_head_dim`` FlashInfer MLA refuses, pick among backends
  not read here: "cannot predict".
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vllm_remedy.vllm.catalog import ModelSpec

DEFAULT_BLOCK = 16  # CacheConfig's block size when nothing sets it (``check_and_update_config``, platforms/cuda.py)
FLASHMLA_BLOCK_SINCE = (0, 8, 0)  # platforms/cuda.py@0.8.0: FlashMLA forces 64 (0.7.2, 0.7.3 force nothing)
CUTLASS_DEFAULT_SINCE = (0, 10, 2)  # platforms/cuda.py@0.10.2: CUTLASS MLA (128) by default on capability 10.0
SPARSE_BLOCK_SINCE = (0, 11, 0)  # platforms/cuda.py@0.11.0: V3.2's FlashMLA sparse forces 64
MULTIPLE_SINCE = (0, 12, 0)  # platforms/cuda.py@0.12.0: ``% 64`` / ``% 128`` tests
CUTLASS_FAMILY_SINCE = (0, 13, 0)  # platforms/cuda.py@0.13.0: any 10.x, dense models only
FLASHINFER_DEFAULT_SINCE = (0, 15, 0)  # platforms/cuda.py@0.15.0: FlashInfer MLA first on 10.x (qk_nope 128)
SELECTOR_SINCE = (0, 18, 0)  # platforms/interface.py@0.18.0: update_block_size_for_backend
NOPE_192_SINCE = (0, 19, 0)  # flashinfer_mla.py@0.19.0 accepts qk_nope_head_dim 192
DEFAULT_64_SINCE = (0, 34, 0)  # config/cache.py@0.34.0: DEFAULT_BLOCK_SIZE 64
SIXTEEN_BIT_KV = ("auto", "float16", "bfloat16")
FP8_KV = ("fp8", "fp8_e4m3")  # FlashMLA's, FlashInfer MLA's and Triton MLA's fp8 spellings (mla/*.py@0.18.0, @0.34.0)


def _refused(model: ModelSpec, version: tuple[int, int, int], what: str) -> tuple[int, str]:
    release = ".".join(map(str, version))
    return DEFAULT_BLOCK, f"cannot predict {model.architecture}: the KV block size vLLM {release} runs MLA with {what}"


def block_size(model: ModelSpec, mla: bool, version: tuple[int, int, int], capability: tuple[int, int] | None,
               typed: int | None, kv_cache_dtype: str = "auto") -> tuple[int, str | None]:
    """(block size, None), or (a placeholder, why it is not known: "cannot predict ...") (see the module
    docstring). ``mla``: the release runs the model's MLA (``Resolved.mla``); with MLA off nothing is forced before
    0.18 (``model_config.use_mla``); ``resolve`` asks ``attn_block`` for a model that does not run MLA (the non-MLA
    selector from 0.18, 0.34's 64), so here ``not mla`` keeps typed or 16.
    """
    if not mla or version < FLASHMLA_BLOCK_SINCE:
        return typed or DEFAULT_BLOCK, None
    sparse = bool(model.index_head_dim)
    if version >= SELECTOR_SINCE:
        return _selected(model, sparse, version, capability, typed, kv_cache_dtype)
    if capability is None:
        return _refused(model, version, "depends on the card's compute capability, which is not known")
    if version < MULTIPLE_SINCE:
        if sparse and version >= SPARSE_BLOCK_SINCE:
            return 64, None
        if version >= CUTLASS_DEFAULT_SINCE and capability == (10, 0):
            return 128, None
        return (64 if capability[0] == 9 else typed or DEFAULT_BLOCK), None
    size = typed or DEFAULT_BLOCK
    nope = model.mla_shape.qk_nope_head_dim if model.mla_shape else 0
    blackwell = capability == (10, 0) if version < CUTLASS_FAMILY_SINCE else capability[0] == 10 and not sparse
    if version >= FLASHINFER_DEFAULT_SINCE and blackwell and nope == 128:
        size = size if size == 32 or size % 64 == 0 else 64
    elif blackwell:
        size = size if size % 128 == 0 else 128
    elif capability[0] == 9:
        size = size if size % 64 == 0 else 64
    return (64 if sparse else size), None


def _selected(model: ModelSpec, sparse: bool, version: tuple[int, int, int], capability: tuple[int, int] | None,
              typed: int | None, kv_cache_dtype: str) -> tuple[int, str | None]:
    """0.18 on: a typed size is kept (DeepSeek is no hybrid), else the backend's preferred size."""
    if typed:
        return typed, None
    default = 64 if version >= DEFAULT_64_SINCE else DEFAULT_BLOCK
    if capability is None:
        return _refused(model, version, "depends on the attention backend the card's compute capability selects, "
                        "which is not known")
    if kv_cache_dtype not in SIXTEEN_BIT_KV + FP8_KV + ("fp8_ds_mla",):
        return _refused(model, version, f"depends on which MLA backend takes --kv-cache-dtype {kv_cache_dtype}, "
                        "not read")
    if sparse:
        if capability[0] == 9:
            return 64, None
        return _refused(model, version, f"depends on the sparse MLA backend selected on capability "
                        f"{capability[0]}.{capability[1]} (not read; read for 9.x only)")
    if kv_cache_dtype == "fp8_ds_mla":
        return _refused(model, version, "with fp8_ds_mla depends on a sparse backend, and this config is dense")
    if capability[0] == 9:
        return (default if kv_cache_dtype in SIXTEEN_BIT_KV else 64), None
    if capability[0] == 10:
        nope = model.mla_shape.qk_nope_head_dim if model.mla_shape else 0
        accepted = (64, 128, 192) if version >= NOPE_192_SINCE else (64, 128)
        if nope not in accepted:
            return _refused(model, version, f"on 10.x with qk_nope_head_dim {nope} (FlashInfer MLA refuses it) "
                            "depends on the next backends, not read")
        return (32 if default % 32 else default), None
    return default, None
