"""The KV block size vLLM runs a model without MLA with, by release, card, KV dtype and FlashInfer's presence; a block
holds whole tokens, so the cache's token count is a multiple of it and one request needs ceil(length / block) blocks
(``KvLayout``). CUDA, with VLLM_ATTENTION_BACKEND / --attention-backend unset (not read by the tools); stateful
(mamba, linear-attention) models are refused before sizing (``architectures``), so their page alignment
(``_align_hybrid_block_size``) is not modelled here.

- before 0.18.0: --block-size or 16. The default is ``EngineArgs.block_size = 16`` through 0.6.4
  (engine/arg_utils.py@0.5.5, @0.6.4), then ``check_and_update_config`` sets 16 when unset (platforms/cuda.py@0.6.5,
  @0.11.0, @0.17.0); nothing there or in ``model_executor/models/config.py`` forces another size on a model
  without MLA or mamba layers (@0.10.1 to @0.17.0 change it for mamba hybrids only).
- from 0.18.0 ``Platform.update_block_size_for_backend`` keeps a typed --block-size and otherwise takes the
  attention backend's ``get_preferred_block_size(CacheConfig.DEFAULT_BLOCK_SIZE)``: the default when a kernel block
  size divides it, else the smallest kernel size (platforms/interface.py@0.18.0, @0.20.0, @0.25.0; from 0.31.0
  ``_preferred_block_size_for_backends`` over the distinct backends, @0.31.0, @0.34.0; v1/attention/backend.py).
  DEFAULT_BLOCK_SIZE is 16 through 0.33, 64 from 0.34.0 (config/cache.py@0.33.0, @0.34.0). FlashAttention
  (``MultipleOf(16)``), FlashInfer ([16, 32, 64]; to 1024 on 10.x trtllm from 0.24), Triton (``MultipleOf(16)``)
  and FlexAttention (no sizes; ``MultipleOf(16)`` from 0.22) all accept the default (v1/attention/backends/*.py
  @0.18.0 to @0.34.0), so the block is the default except for:
  * FlashAttention 4's head-256 kernel, from 0.29.0: 128 (``FA4_HD256_PAGE_SIZE``, ``get_preferred_block_size``
    returns max(default, 128); v1/attention/backends/flash_attn.py, fa_utils.py@0.29.0, @0.34.0) for a head-256
    model on capability 10.x, where FA4 is the default version (``get_flash_attn_version``; the wheel ships
    vllm_flash_attn/cute@0.29.0 to @0.34.0) and unless a fallback reason holds: soft capping, a quantized KV cache,
    mm-prefix attention, R-SWA, decode context parallelism (``_fa4_hd256_fallback_reason``). FlashAttention takes
    such a layer on 10.x only when FlashInfer, first there (``_get_backend_priorities``, platforms/cuda.py@0.29.0,
    @0.34.0), cannot: its module imports ``flashinfer``, and an ImportError makes it invalid (``get_valid_backends``).
    Soft capping, R-SWA and DCP are not read here: such a model is sized with 128, the safe side (a size that
    divides another never holds fewer tokens).
  * from 0.30.0 an mm-prefix model (model_type gemma3 or paligemma, ``is_mm_prefix_lm``,
    transformers_utils/model_arch_config_convertor.py@0.30.0) of head size 256 or 512 on 10.x selects
    TRITON_FLASHINFER first, whose kernel block is 64 (v1/attention/backends/triton_flashinfer.py@0.30.0, @0.34.0);
    without FlashInfer it falls to Triton (FlashAttention refuses mm-prefix below FA4, which that kernel's fallback
    leaves): the default. Text-only serving turning mm-prefix off (0.28+) is not read: 64 is the safe side.
  * from 0.31.0 FA4's SM90 fp8 kernel for head size 512 (``_get_sm90_fa4_fp8_kv_block_size``: 64) on 9.x with an
    fp8 / fp8_e4m3 KV cache (flash_attn.py@0.31.0, @0.34.0).
  A float32 model takes none of these: FlashAttention, FlashInfer and the composites run 16-bit models only
  (``supported_dtypes``, flash_attn.py / flashinfer.py / composite.py@0.29.0, @0.34.0), Triton takes float32.
  Where FlashInfer's presence is unknown (the ``flashinfer`` input unset) the larger of the two readings is taken.
  Where the card is unknown and the size depends on it, "cannot predict", as ``mla_block`` does.
- Sliding-window and full-attention layers of one model (gpt-oss, Gemma 2/3) have the same page per token: the
  hybrid manager asserts one page size through 0.11 (``get_uniform_page_size``,
  v1/core/kv_cache_utils.py@0.10.0, @0.11.0), and from 0.12 ``unify_kv_cache_spec_page_size`` scales a block only
  where pages differ (@0.12.0, @0.19.0, v1/core/kv_cache_planning.py@0.34.0): one block size for every group.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vllm_remedy.vllm.catalog import ModelSpec

DEFAULT_BLOCK = 16  # EngineArgs / check_and_update_config / CacheConfig.DEFAULT_BLOCK_SIZE through 0.33
SELECTOR_SINCE = (0, 18, 0)  # platforms/interface.py@0.18.0: update_block_size_for_backend
FA4_HD256_SINCE = (0, 29, 0)  # fa_utils.py@0.29.0: FA4_HD256_PAGE_SIZE = 128 (absent @0.28.0)
MM_PREFIX_COMPOSITE_SINCE = (0, 30, 0)  # triton_flashinfer.py@0.30.0 (absent @0.29.0)
SM90_FP8_512_SINCE = (0, 31, 0)  # flash_attn.py@0.31.0: _get_sm90_fa4_fp8_kv_block_size (absent @0.30.0)
DEFAULT_64_SINCE = (0, 34, 0)  # config/cache.py@0.34.0: DEFAULT_BLOCK_SIZE 64
FA4_HD256_BLOCK = 128
MM_PREFIX_BLOCK = 64  # TRITON_FLASHINFER's kernel_block_sizes
SM90_FP8_512_BLOCK = 64
SM90_FP8_512_HEAD = 512
FP8_FA = ("fp8", "fp8_e4m3")  # the spellings _get_sm90_fa4_fp8_kv_block_size reads
# model_type gemma3 / paligemma (MM_PREFIX_LM_MODELS, model_arch_config_convertor.py@0.30.0) by their architectures;
# bagel, molmo2 and moondream3 are not in the catalog
MM_PREFIX_ARCHITECTURES = ("Gemma3ForConditionalGeneration", "PaliGemmaForConditionalGeneration")
_CARDS = ((9, 0), (10, 0), (8, 0))  # the cases the size tells apart: 9.x, 10.x, any other


def block_size(model: ModelSpec, version: tuple[int, int, int], capability: tuple[int, int] | None,
               typed: int | None, kv_cache_dtype: str = "auto", flashinfer: bool | None = None,
               dtype: str = "bfloat16") -> tuple[int, str | None]:
    """(block size, None), or (a placeholder, "cannot predict ...") where the card is unknown and decides it (see
    the module docstring). ``flashinfer``: FlashInfer imports in the image (None: unknown); ``dtype``: the dtype the
    model runs in (``Resolved.dtype``)."""
    if typed:
        return typed, None
    if version < SELECTOR_SINCE:
        return DEFAULT_BLOCK, None
    if dtype == "float32":  # Triton's MultipleOf(16) takes the default
        return (64 if version >= DEFAULT_64_SINCE else DEFAULT_BLOCK), None
    if capability is not None:
        return _selected(model, version, capability, kv_cache_dtype, flashinfer), None
    sizes = {_selected(model, version, card, kv_cache_dtype, flashinfer) for card in _CARDS}
    if len(sizes) == 1:
        return sizes.pop(), None
    release = ".".join(map(str, version))
    return DEFAULT_BLOCK, (f"cannot predict {model.architecture}: the KV block size vLLM {release} runs it with "
                           f"(head size {model.head_dim}) depends on the attention backend the card's compute "
                           "capability selects, which is not known")


def _selected(model: ModelSpec, version: tuple[int, int, int], capability: tuple[int, int], kv_cache_dtype: str,
              flashinfer: bool | None) -> int:
    """The preferred size of the backend this card selects (0.18 on, nothing typed)."""
    default = 64 if version >= DEFAULT_64_SINCE else DEFAULT_BLOCK
    head = model.head_dim
    fp8 = kv_cache_dtype.startswith("fp8")
    if capability[0] == 9:
        if version >= SM90_FP8_512_SINCE and head == SM90_FP8_512_HEAD and kv_cache_dtype in FP8_FA:
            return max(default, SM90_FP8_512_BLOCK)
        return default
    if capability[0] != 10:
        return default
    mm_prefix = model.architecture in MM_PREFIX_ARCHITECTURES
    with_flashinfer = default
    if version >= MM_PREFIX_COMPOSITE_SINCE and mm_prefix and head in (256, 512):
        with_flashinfer = max(default, MM_PREFIX_BLOCK)
    without = default  # FlashAttention, or Triton where FlashAttention refuses
    if version >= FA4_HD256_SINCE and head == 256 and not fp8 and not mm_prefix:
        without = max(default, FA4_HD256_BLOCK)
    if flashinfer is None:
        return max(with_flashinfer, without)
    return with_flashinfer if flashinfer else without

