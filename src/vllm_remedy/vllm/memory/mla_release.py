"""Whether a release caches a DeepSeek-style model's MLA latent or full K/V per head, and the bytes per token it keeps.

Read from each release's ``ModelConfig`` (config.py, from 0.11 config/model.py) and models/deepseek_v2.py:

- 0.5.5-0.6.6: no MLA cache. ``get_head_size`` returns 256 for model_type deepseek_v2 ("pad head_size 192 to 256",
  config.py@0.5.5, 0.6.3, 0.6.5), deepseek_v3 too from 0.6.6 (config.py@0.6.6); the cache keeps K and V for every
  KV head (``get_num_kv_heads``) and deepseek_v2.py@0.6.3 builds ``Attention(num_local_heads, 256, ...,
  num_kv_heads=num_local_heads)``.
- 0.7.0: ``get_head_size`` returns qk_rope_head_dim + qk_nope_head_dim (192 for DeepSeek) for both model types, all
  KV heads (config.py@0.7.0; deepseek_v2.py@0.7.0 ``Attention(num_local_heads, qk_head_dim, ...)``).
- 0.7.1 and 0.7.2: ``use_mla`` returns False when ``quantization`` is set and is not fp8 or compressed-tensors ("MLA
  is not supported with %s quantization. Disabling MLA."), or for compressed-tensors unless every config group has
  fp8 weights and activations, or with VLLM_MLA_DISABLE (config.py@0.7.1, @0.7.2); the cache is then K/V of 192 per
  head, else one latent head of kv_lora_rank + qk_rope_head_dim (``get_head_size``, ``get_num_kv_heads`` 1).
- 0.7.3 on: ``use_mla`` is ``is_deepseek_mla and not envs.VLLM_MLA_DISABLE`` (config.py@0.7.3, 0.8.5, 0.9.2,
  config/__init__.py@0.10.2, config/model.py@0.11.0, 0.20.0), from 0.30 ``if envs.VLLM_MLA_DISABLE: return False``
  first (config/model.py@0.30.0, 0.34.0); off, deepseek_v2.py@0.11.0/0.30.0 builds ``DeepseekV2Attention``:
  ``Attention(num_local_heads, qk_head_dim, ..., num_kv_heads=num_local_heads)``.
- DeepSeek-V3.2's indexer adds its own cache layer per MLA layer (``indexer_cache``). With MLA off (VLLM_MLA_DISABLE)
  V3.2 does not start: ``DeepseekV2Model`` builds ``topk_indices_buffer`` whenever the config has ``index_topk`` and
  every decoder layer passes it to its attention class, and ``DeepseekV2Attention.__init__`` asserts it is None
  (models/deepseek_v2.py@0.11.0, 0.12.0, 0.14.0, 0.16.0, 0.18.0, 0.20.0, 0.22.0, 0.24.0, 0.26.0, 0.28.0, 0.30.0,
  0.32.0, 0.34.0): an AssertionError while the model is built. No outcome class names that, so it is "cannot
  predict", with that reason.

What MLA off does not change here, read in the same files: the weights (``DeepseekV2Attention`` and
``DeepseekV2MLAAttention`` build the same q/kv_a/kv_b projections and ``o_proj = RowParallelLinear(num_heads *
v_head_dim, ...)``, deepseek_v2.py@0.6.3, @0.11.0), the rotary cache (``get_rope(qk_rope_head_dim, ...)`` in both),
and the TP split (both assert ``num_heads % tp_size == 0``; neither uses ``QKVParallelLinear``, whose KV-head rule
``tp_split`` therefore leaves out for these configs whether MLA runs or not). What it does change elsewhere: the V1
oracle's ``is_kv_cache_dtype_supported(kv_cache_dtype, model_config)`` reads ``use_mla`` (platforms/cuda.py@0.10.2)
and V0's chunked-prefill default leaves out ``use_mla`` models (engine/arg_utils.py@0.8.0-@0.10.2); both follow
``use_mla`` here (``settings.engine_rules``, ``chunked.v0_default``), and so does the block size (``mla_block``). With
MLA on, the latent's bytes by cache dtype (V3.2's ``fp8_ds_mla``) are ``mla_cache``'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vllm_remedy.vllm import mla_types
from vllm_remedy.vllm.memory import indexer_cache, mla_cache
from vllm_remedy.vllm.memory.unmodelled import CannotPredict

if TYPE_CHECKING:
    from vllm_remedy.vllm.catalog import ModelSpec

MLA_SINCE = (0, 7, 1)  # config.py@0.7.1: ``use_mla``
HEAD_QK_SINCE = (0, 7, 0)  # config.py@0.7.0: qk_rope_head_dim + qk_nope_head_dim, no longer padded to 256
V3_PADDED_SINCE = (0, 6, 6)  # config.py@0.6.6 pads deepseek_v3 as well as deepseek_v2
QUANT_GATE_UNTIL = (0, 7, 3)  # config.py@0.7.3 drops the quantization condition
PADDED_HEAD = 256
# model_type per architecture, for a spec that carries none (a catalog entry): what the checkpoints' config.json say.
_ARCH_TYPES = {"DeepseekV2ForCausalLM": "deepseek_v2", "DeepseekV3ForCausalLM": "deepseek_v3"}


def model_type(model: ModelSpec) -> str:
    """The config's model_type (``LengthFacts.model_type``), else the one the architecture's checkpoints carry."""
    kind = model.length.model_type if model.length is not None else ""
    return kind or _ARCH_TYPES.get(model.architecture, "")


def runs_mla(model: ModelSpec, version: tuple[int, int, int], quantization: str | None, disabled: bool) -> bool:
    """Whether the release caches the MLA latent for this model (see the module docstring); ``quantization``: the
    method vLLM runs (``--quantization`` or the checkpoint's); ``disabled``: VLLM_MLA_DISABLE reads true. A
    compressed-tensors checkpoint on 0.7.1/0.7.2 runs MLA when every config group is ``"fp8"`` for its weights and
    activations as ``use_mla`` reads them (``ModelSpec.ct_mla_groups``, config.py@0.7.2 l.998-1016); "cannot predict"
    where the spec does not say (a checkpoint of another method, or groups that loop would fail on)."""
    if not model.is_mla or version < MLA_SINCE or disabled:
        return False
    if model_type(model) not in mla_types.listed(version):  # ``is_deepseek_mla`` is False: not MLA in this release
        raise CannotPredict(f"cannot predict {model.architecture}: vLLM {'.'.join(map(str, version))} does not list "
                            f"model_type {model_type(model) or '(none)'} in is_deepseek_mla (later releases do), so it "
                            "runs this config without MLA through a path not read here (vllm.mla_types)")
    if version < QUANT_GATE_UNTIL and quantization is not None:
        if quantization == "compressed-tensors":
            if model.ct_mla_groups is not None:
                return model.ct_mla_groups
            raise CannotPredict(f"cannot predict {model.architecture} with compressed-tensors on vLLM 0.7.1/0.7.2: MLA "
                                "runs only when every config group has fp8 weights and activations (config.py@0.7.2 "
                                "use_mla), and this checkpoint's groups were not read")
        return quantization == "fp8"
    return True


def head_size(model: ModelSpec, version: tuple[int, int, int]) -> int:
    """The per-head K/V width a release caches when it does not run MLA."""
    if version >= HEAD_QK_SINCE:
        return model.head_dim  # qk_nope_head_dim + qk_rope_head_dim (``hf_config.head_dim``)
    padded = ("deepseek_v2", "deepseek_v3") if version >= V3_PADDED_SINCE else ("deepseek_v2",)
    if model_type(model) not in padded:
        raise CannotPredict(f"cannot predict {model.architecture}: vLLM before 0.7.0 pads the head of model_type "
                            f"{' / '.join(padded)} only; {model_type(model) or 'no model_type'} was not read")
    return PADDED_HEAD


def kv_bytes_per_layer_token(model: ModelSpec, mla: bool, version: tuple[int, int, int], engine: str, tp: int,
                             kv_dtype_bytes: int, cache_dtype: str = "auto", model_bytes: int = 2) -> int:
    """Bytes one token takes in one layer on this rank for an MLA-capable model: the latent when the release runs
    MLA (``mla``: ``Resolved.mla``; at ``cache_dtype`` as the release converts it and V0's 256-byte alignment of
    0.7.x with the model dtype's ``model_bytes``, ``mla_cache``; plus V3.2's indexer), else K and V per KV head
    (V1's layer: num_local_heads; V0's cache engine: ``get_num_kv_heads``, the config's KV heads)."""
    if mla:
        aligned = mla_cache.v0_aligned(version, engine)
        latent = mla_cache.latent_bytes(model, cache_dtype, kv_dtype_bytes, aligned, model_bytes)
        return latent + indexer_cache.bytes_per_layer_token(model, version)
    if model.index_head_dim:
        raise CannotPredict(
            f"cannot predict {model.architecture} without MLA: vLLM still builds the indexer's top-k buffer for a "
            "config with index_topk and hands it to the non-MLA DeepseekV2Attention, which asserts it is None, so "
            "the start fails while the model is built (AssertionError: topk_indices_buffer is not supported for "
            "DeepseekV2Attention; models/deepseek_v2.py@0.11.0 to @0.34.0), a failure with no outcome class here; "
            "unset VLLM_MLA_DISABLE to run V3.2 with MLA")
    heads = model.num_heads if engine == "V1" else model.num_kv_heads
    return 2 * max(1, heads // tp) * head_size(model, version) * kv_dtype_bytes
