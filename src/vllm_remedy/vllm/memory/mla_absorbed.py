"""The weights an MLA layer makes in ``process_weights_after_loading`` beside the checkpoint's, by release. The model
loader calls it inside ``load_model`` (model_loader/utils.py ``process_weights_after_loading``), so what it keeps is
in "Model loading took" and in the weights here.

- 0.7.1-0.7.3 (attention/backends/mla/utils.py@0.7.2, @0.7.3; 0.7.1 not in the extracts, taken as 0.7.2), with
  VLLM_MLA_PERFORM_MATRIX_ABSORPTION at its default 1 and VLLM_MLA_DISABLE_REQUANTIZATION at its default 0
  (envs.py@0.7.3; neither read by the tools): ``W_QR = q_proj_weight[..., qk_nope_head_dim:].flatten(1)
  .contiguous()`` (q_in x heads x qk_rope_head_dim, activation dtype), ``W_Q_UK = einsum(W_Q, W_UK)`` (q_in x heads
  x kv_lora_rank) and ``W_UV_O = einsum(W_UV, W_O)`` (heads x kv_lora_rank x hidden) are new tensors kept beside
  q_proj, kv_b_proj and o_proj (``q_in``: q_lora_rank, or hidden_size for a full-rank query; ``heads``: this
  rank's, num_heads / TP). ``W_UK`` / ``W_UV`` are views of kv_b_proj's weight as ``get_and_maybe_dequant_weights``
  returns it: the weight itself unquantized, else a dequantized activation-dtype copy they keep alive. When the
  stored weight is fp8 (``is_fp8(weight_dtype)``), ``W_Q_UK`` and ``W_UV_O`` are re-quantized to fp8
  (``scaled_quantize``, quantization/utils/quant_utils.py@0.7.3: one float32 scale per weight group, the
  checkpoint's group shape, ``mla_shape.fp8_group``), else kept at the activation dtype. An fp8 layer is stored
  fp8 on capability 8.9+, or for block quantization anywhere (fp8.py@0.7.3 l.144-153: Marlin below 8.9, never for
  blocks); the Marlin case and compressed-tensors groups whose shape is not read are "cannot predict".
- 0.8.0 on (v1/attention/backends/mla/common.py@0.8.0 to @0.14.0, model_executor/layers/attention/
  mla_attention.py@0.16.0 to @0.34.0): only ``W_UV = W_UV.transpose(0, 1)`` and ``W_UK_T = W_UK.permute(1, 2, 0)``,
  views of ``get_and_maybe_dequant_weights(kv_b_proj)``. Unquantized, that is kv_b_proj's own weight
  (``return layer.weight``; from 0.18 ``weight.to(out_dtype)`` at the same dtype, the same tensor; from 0.26
  ``replace_parameter`` wraps the view without copying when no parameter of that name exists, model_executor/
  utils.py@0.26.0): nothing more is kept. Quantized, it is a new activation-dtype tensor (the quant method applied
  to an identity, or ``scaled_dequantize`` for fp8 from 0.18, quantization/utils/quant_utils.py@0.18.0, @0.26.0)
  that the two views keep alive beside the quantized weight: kv_lora_rank x heads x (qk_nope_head_dim +
  v_head_dim) values a layer. (ROCm's AITER fp8 / mxfp4 BMM paths differ; CUDA only here.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vllm_remedy.vllm.catalog import ModelSpec

ABSORBED_UNTIL = (0, 8, 0)  # 0.8.0 drops the absorbed q / o matrices (v1/attention/backends/mla/common.py@0.8.0)


def kv_b_quantized(model: ModelSpec, quantization: str | None, weight_bits: int) -> bool | None:
    """Whether kv_b_proj runs through a quantized linear method: the checkpoint's method unless its config leaves
    modules out that may include it (None: not known), or an online method that packs every linear layer."""
    if model.quantized_checkpoint and model.quantized_scope == "experts":
        return False  # only the routed experts are packed (mxfp4): attention stays 16-bit
    if model.quantized_checkpoint:
        return model.mla_shape.kv_b_quantized if model.mla_shape else None
    return weight_bits < 16 and quantization is not None


def _scales(rows: int, cols: int, group: tuple[int, int]) -> int:
    """Bytes of ``scaled_quantize``'s float32 scales for a rows x cols matrix (-1: the whole extent)."""
    return (rows // (group[0] if group[0] > 0 else rows)) * (cols // (group[1] if group[1] > 0 else cols)) * 4


def _fp8_group(model: ModelSpec, quantization: str | None, capability: tuple[int, int] | None
               ) -> tuple[tuple[int, int] | None, bool]:
    """(the weight group shape, whether the layer's stored weight is fp8) on 0.7.x; (None, True) where it is fp8
    but the group, or the storage (Marlin below 8.9), is not read."""
    shape = model.mla_shape
    method = (model.quantization if model.quantized_checkpoint else quantization) or ""
    group = shape.fp8_group if model.quantized_checkpoint and shape else (-1, -1) if method == "fp8" else None
    fp8 = method == "fp8" or (method == "compressed-tensors" and group is not None)
    if method == "compressed-tensors" and group is None:
        return None, True  # groups of another type or strategy: not read
    if fp8 and group is not None and group[0] <= 0 and (capability is None or capability < (8, 9)):
        return None, True  # per-tensor / channel fp8 below 8.9 (or an unknown card) may run through Marlin
    return group, fp8


def extra_bytes(model: ModelSpec, mla: bool, version: tuple[int, int, int], tp: int, act_bytes: int,
                quantization: str | None, weight_bits: int, capability: tuple[int, int] | None = None
                ) -> tuple[int, str | None]:
    """(bytes a rank keeps besides the checkpoint's weights, None) (see the module docstring), or (0, why they are
    not sized: "cannot predict ..."); ``mla``: the release runs the model's MLA (``Resolved.mla``)."""
    if not mla or model.kv_lora_rank is None:
        return 0, None
    shape = model.mla_shape
    quantized = kv_b_quantized(model, quantization, weight_bits)
    if shape is None or quantized is None:
        return 0, (f"cannot predict {model.architecture}: the MLA weights vLLM derives from kv_b_proj depend on "
                   "whether kv_b_proj is quantized, which this config's quantization_config leaves open (a list of "
                   "left-out modules that may name it)")
    heads = max(1, model.num_heads // tp)
    rank = model.kv_lora_rank
    kv_b = rank * heads * (shape.qk_nope_head_dim + shape.v_head_dim) * act_bytes if quantized else 0
    if version >= ABSORBED_UNTIL:
        return model.num_layers * kv_b, None
    q_in = shape.q_lora_rank or model.hidden_size
    w_qr = q_in * heads * (model.qk_rope_head_dim or 0) * act_bytes
    q_uk, uv_o = (q_in, heads * rank), (heads * rank, model.hidden_size)
    group, fp8 = _fp8_group(model, quantization, capability) if quantized else (None, False)
    if fp8 and group is None:
        return 0, (f"cannot predict {model.architecture} with fp8 weights on vLLM 0.7.x here: MLA's absorbed "
                   "matrices are re-quantized with the layer's fp8 group shape and storage (attention/backends/mla/"
                   "utils.py@0.7.3), which this checkpoint or card leaves unread (compressed-tensors groups of "
                   "another shape, or per-tensor fp8 that may run through Marlin below capability 8.9)")
    if fp8 and group is not None:
        absorbed = sum(r * c + _scales(r, c, group) for r, c in (q_uk, uv_o))
    else:
        absorbed = sum(r * c for r, c in (q_uk, uv_o)) * act_bytes
    return model.num_layers * (kv_b + w_qr + absorbed), None
