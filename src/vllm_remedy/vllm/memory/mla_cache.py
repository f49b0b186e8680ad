"""The bytes one token's MLA latent takes in one layer, and when DeepSeek-V3.2's cache becomes ``fp8_ds_mla``.

``fp8_ds_mla`` is FlashMLA sparse's layout: 512 fp8 NoPE values, 4 float32 scales (one per 128), 64 bfloat16 rope
values: 656 bytes a token (``MLAAttentionSpec.page_size_bytes`` returns ``block_size * 656``,
v1/kv_cache_interface.py@0.11.0, @0.12.0, @0.17.0, @0.18.0 to @0.23.0; ``real_page_size_bytes``@0.24.0 to @0.27.0 for
V3.2; the layout
in v1/attention/backends/mla/flashmla_sparse.py@0.11.0). Any other dtype keeps (kv_lora_rank + qk_rope_head_dim)
values of its width. When vLLM picks it:

- 0.11.x: ``DeepseekV32ForCausalLM.verify_and_update_config`` (model_executor/models/config.py@0.11.0, keyed by the
  architecture in ``MODELS_CONFIG_MAP``) turns ``auto`` and every ``fp8*`` into ``fp8_ds_mla`` ("Using custom fp8
  kv-cache format for DeepSeekV3.2"), ``bfloat16`` into ``auto``.
- 0.12.0-0.17.x: the same class turns only ``fp8*`` into it (config.py@0.12.0, @0.14.0, @0.16.0, @0.17.0): ``auto``
  keeps the model's 16-bit latent.
- 0.18.0 on: the class only maps ``bfloat16`` to ``auto`` (config.py@0.18.0); ``MLAAttention`` converts a quantized
  dtype when the selected backend is FlashMLA sparse (layers/attention/mla_attention.py@0.18.0 inline, @0.24.0
  ``_canonicalize_sparse_mla_kv_cache_dtype``, which also turns ``auto`` into it for FlashInfer MLA sparse SM120).
  On capability 9.x V3.2's backends are FlashMLA sparse (``fp8`` or ``fp8_ds_mla``; flashmla_sparse.py@0.18.0,
  @0.24.0) and, for a 16-bit cache, FlashAttention MLA sparse from 0.25.0: ``fp8`` is ``fp8_ds_mla``, a 16-bit cache
  stays 16-bit, and ``fp8_e4m3`` / ``fp8_e5m2`` find no sparse backend there. On other cards the sparse backend
  decides (not read), and from 0.28.0 the sparse backends size the page themselves (``customize_spec``,
  ``MLAAttentionSpec`` no longer names fp8_ds_mla; 0.34.0 aligns V3.2's block stride to rows,
  mla/sparse_utils.py): not re-read, "cannot predict" for V3.2 there whatever the dtype.

V0 on 0.7.1-0.7.3 aligns each token's latent to 256 bytes (worker/cache_engine.py@0.7.2, @0.7.3, with
VLLM_CUDA_MEM_ALIGN_KV_CACHE at its default 1, envs.py; not read by the tools; 0.8.0's cache engine has no such
step): ``get_cache_block_size`` rounds kv_lora_rank + qk_rope_head_dim up to a multiple of 256 / the MODEL dtype's
size (640 values for 576 at 16 bits) and charges them at the CACHE dtype's size: 1,280 bytes a token at 16 bits
(not 1,152). The allocation rounds with the cache dtype instead (``align_to_256bytes(entry_size, self.dtype)``): for
an fp8 cache 768 bytes allocated a token against 640 counted, a difference the budget does not hold: "cannot
predict" there.

A V3.2-shaped config (``index_topk``) under another architecture misses the 0.11-0.17 conversion and hands ``fp8``
to FlashMLA sparse, which lists only ``auto`` and ``fp8_ds_mla`` (flashmla_sparse.py@0.12.0): not read, "cannot
predict". A typed ``fp8_ds_mla`` on a dense MLA model reaches backends that do not list it (flashmla.py,
triton_mla.py@0.18.0): "cannot predict".
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vllm_remedy.vllm.catalog import ModelSpec

DS_MLA_BYTES = 656  # 512 x fp8 + 4 x float32 + 64 x bfloat16
V32_ARCH = "DeepseekV32ForCausalLM"  # the MODELS_CONFIG_MAP key (model_executor/models/config.py@0.11.0-@0.18.0)
V32_CONFIG_SINCE = (0, 11, 0)
AUTO_TO_DS_UNTIL = (0, 12, 0)  # config.py@0.12.0 converts fp8* only
BACKEND_DECIDES_SINCE = (0, 18, 0)
PAGE_READ_UNTIL = (0, 28, 0)  # kv_cache_interface.py@0.28.0 no longer names fp8_ds_mla (its sizing not re-read)
V0_ALIGN_UNTIL = (0, 8, 0)  # worker/cache_engine.py@0.8.0 has no 256-byte alignment
ALIGN_BYTES = 256


def _cannot(model: ModelSpec, version: tuple[int, int, int], what: str) -> str:
    return f"cannot predict {model.architecture}: the MLA cache vLLM {'.'.join(map(str, version))} keeps {what}"


def cache_dtype(model: ModelSpec, version: tuple[int, int, int], capability: tuple[int, int] | None,
                typed: str) -> tuple[str, str | None]:
    """(the KV cache dtype the release runs this MLA model with, None), or (``typed``, why it is not known)."""
    sparse = bool(model.index_head_dim) and version >= V32_CONFIG_SINCE
    fp8 = typed.startswith("fp8")
    if not sparse:
        if typed == "fp8_ds_mla":
            return typed, _cannot(model, version, "with --kv-cache-dtype fp8_ds_mla on a config without index_topk "
                                  "(FlashMLA sparse's layout, which no dense MLA backend lists) is not read")
        return typed, None
    if version < BACKEND_DECIDES_SINCE:
        if model.architecture != V32_ARCH and fp8 and typed != "fp8_ds_mla":
            return typed, _cannot(model, version, f"for {typed} under {model.architecture} (no "
                                  f"{V32_ARCH} config class to convert it for FlashMLA sparse) is not read")
        if model.architecture == V32_ARCH and (fp8 or (typed == "auto" and version < AUTO_TO_DS_UNTIL)):
            return "fp8_ds_mla", None
        return ("auto" if typed == "bfloat16" else typed), None
    if version >= PAGE_READ_UNTIL:
        return typed, _cannot(model, version, "for V3.2's sparse attention is sized by its backend from 0.28.0 "
                              "(customize_spec, block_stride_alignment: sparse_utils.align_blocks_to_rows@0.34.0), "
                              "not re-read")
    if capability is None or capability[0] != 9:
        card = "an unknown card" if capability is None else f"capability {capability[0]}.{capability[1]}"
        return typed, _cannot(model, version, f"for V3.2's sparse attention on {card} depends on the sparse "
                              "backend selected there (not read; read for 9.x only)")
    if typed in ("fp8", "fp8_ds_mla"):
        return "fp8_ds_mla", None
    if fp8:
        return typed, _cannot(model, version, f"for {typed} on 9.x: no sparse MLA backend lists it (not read "
                              "further)")
    return ("auto" if typed == "bfloat16" else typed), None


def v0_aligned(version: tuple[int, int, int], engine: str) -> bool:
    """Whether the release's V0 cache engine aligns MLA entries to 256 bytes (see the module docstring)."""
    return engine == "V0" and version < V0_ALIGN_UNTIL


def alignment_unknown(model: ModelSpec, version: tuple[int, int, int], engine: str, dtype_bytes: int,
                      model_bytes: int) -> str | None:
    """Why the aligned latent is not known: the cache engine allocates more than it counts (see the docstring)."""
    values = (model.kv_lora_rank or 0) + (model.qk_rope_head_dim or 0)
    if not v0_aligned(version, engine) or dtype_bytes == model_bytes:
        return None
    counted = -(-values // (ALIGN_BYTES // model_bytes)) * (ALIGN_BYTES // model_bytes) * dtype_bytes
    allocated = -(-values // (ALIGN_BYTES // dtype_bytes)) * (ALIGN_BYTES // dtype_bytes) * dtype_bytes
    if counted == allocated:
        return None
    return _cannot(model, version, f"on V0 allocates {allocated} bytes a token and layer but counts {counted} "
                   "(worker/cache_engine.py: the entry is aligned with the cache dtype, the block size with the "
                   "model dtype); the difference is not in the budget")


def latent_bytes(model: ModelSpec, dtype: str, dtype_bytes: int, aligned: bool = False, model_bytes: int = 2) -> int:
    """One token's latent in one layer as vLLM counts it: 656 for ``fp8_ds_mla``, else the latent at ``dtype_bytes``
    a value, rounded up to 256 bytes of the model dtype when ``aligned`` (``v0_aligned``)."""
    if dtype == "fp8_ds_mla":
        return DS_MLA_BYTES
    values = (model.kv_lora_rank or 0) + (model.qk_rope_head_dim or 0)
    if aligned:
        per_256 = ALIGN_BYTES // model_bytes
        values = -(-values // per_256) * per_256
    return values * dtype_bytes
