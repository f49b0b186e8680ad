"""DeepSeek-V3.2's indexer cache: a second cache layer beside each MLA layer, holding one fp8 key per token.

Read from models/deepseek_v2.py@0.11.0 (the release that registers ``DeepseekV32ForCausalLM``; registry.py@0.10.2
has no such entry), @0.13.0, @0.30.0 and @0.34.0: a layer builds its ``Indexer`` when ``is_v32 = hasattr(config,
"index_topk")``, and the indexer registers ``DeepseekV32IndexerCache(head_dim=index_head_dim + index_head_dim //
quant_block_size * 4, dtype=torch.uint8)`` with ``quant_block_size = 128`` ("we use fp8 naive cache, where we store
value in fp8 and scale in fp32 per self.quant_block_size element"); its ``get_kv_cache_spec`` is an
``MLAAttentionSpec`` of one head. So a token costs index_head_dim bytes of fp8 keys plus 4 bytes of fp32 scale per
128 of them in every layer, whatever --kv-cache-dtype says: 132 bytes for index_head_dim 128.

The two kinds share one group and block table: their page sizes differ, but both are ``FullAttentionSpec`` (an
``MLAAttentionSpec``) of one block size, so ``UniformTypeKVCacheSpecs.is_uniform_type`` holds and the group's page is
the sum of every layer's (``page_size_bytes``, v1/kv_cache_interface.py@0.11.0 l.275-299, @0.18.0, @0.25.0;
``unify_hybrid_kv_cache_specs``, v1/core/kv_cache_utils.py@0.11.0): the bytes add to the per-token cost, unpadded
(``page_size_padded`` is set for Mamba layers only, layers/mamba/abstract.py@0.18.0).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vllm_remedy.vllm.catalog import ModelSpec

INDEXER_SINCE = (0, 11, 0)  # models/deepseek_v2.py@0.11.0: DeepseekV32IndexerCache
QUANT_BLOCK = 128  # Indexer.quant_block_size ("TODO: get from config"), 0.11.0 to 0.34.0
SCALE_BYTES = 4  # one fp32 scale per QUANT_BLOCK values


def bytes_per_layer_token(model: ModelSpec, version: tuple[int, int, int]) -> int:
    """The indexer cache's bytes for one token in one layer (0 for a model without ``index_topk`` or before 0.11)."""
    if not model.index_head_dim or version < INDEXER_SINCE:
        return 0
    return model.index_head_dim + model.index_head_dim // QUANT_BLOCK * SCALE_BYTES
