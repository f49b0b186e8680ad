"""NVFP4 weights (ModelOpt's and compressed-tensors') as vLLM allocates them: packed 4-bit values, one FP8 scale per
group, no zero points.

``ModelOptNvFp4LinearMethod.create_weights`` (modelopt.py@0.9.0-@0.34.0) registers, per quantized linear layer,
``weight`` uint8 ``[out, in / 2]`` (two 4-bit values a byte), ``weight_scale`` float8_e4m3fn ``[out, in /
group_size]`` and two float32 per-tensor scales per fused shard (``input_scale``, ``weight_scale_2``);
``ModelOptNvFp4FusedMoE.create_weights`` the same per expert (``w13_weight`` [E, 2 x inter, hidden / 2], ``w2_weight``
[E, hidden, inter / 2], their ``*_weight_scale`` in float8 at ``/ group_size``, float32 ``*_weight_scale_2`` /
``*_input_scale`` [E, 2] and [E]). ``ModelOptNvFp4Config`` takes ``group_size`` from the config, 16 when none is
stated (``from_config``, modelopt.py@0.10.0 l.56-59 nested / l.89-92 flat, @0.10.1 l.615-660). So a weight costs
0.5 B plus 1 / 16 B of scale: +12.5 % on the packed bytes per scale copy. The integer layouts' sizing (fp16 scales
and int32 zero points per group of 128, ``weights.int4_overhead``: +3.9 %) sized it before, for either spelling.

How many scale copies stay after ``process_weights_after_loading`` (what "Model loading took" counts) hangs on the
release and the kernel:
- through 0.10.1 the CUTLASS paths keep the loaded ``weight_scale`` and add a padded, swizzled copy beside it
  (``layer.weight_scale_swizzled = Parameter(swizzle_blockscale(layer.weight_scale))``, modelopt.py@0.8.0,
  @0.9.0 l.111-140, @0.10.1 l.817-866; the MoE method ``w13_blockscale_swizzled`` / ``w2_blockscale_swizzled``
  beside ``w13_weight_scale`` / ``w2_weight_scale``, @0.9.0, @0.10.1 l.1187-1290): two copies. The Marlin
  fallback deletes the swizzled one (``del layer.weight_scale_swizzled`` after ``prepare_fp4_layer_for_marlin``,
  @0.9.0-@0.10.1; MoE: ``del layer.w13_blockscale_swizzled``), and its repacked scales are float8 again, one per
  group (``nvfp4_marlin_process_scales`` ends in ``[:, 1::2]`` of the int16 view, utils/marlin_utils_fp4.py@0.10.1
  l.25-55): one copy.
- from 0.10.2 the swizzled copy replaces the loaded one (``layer.weight_scale = Parameter(swizzled_weight_scale)``,
  modelopt.py@0.10.2, @0.13.0; MoE ``layer.w13_weight_scale = Parameter(w13_blockscale_swizzled)``; from 0.14.0 /
  0.16.0 ``convert_to_nvfp4_moe_kernel_format`` / ``convert_to_nvfp4_linear_kernel_format`` with
  ``replace_parameter``, utils/nvfp4_utils.py@0.16.0 l.130-167): one copy on every path.

The kernel: CUTLASS (or FlashInfer's CUTLASS) where ``cutlass_fp4_supported()``, i.e. ``cutlass_scaled_mm_supports_
fp4``: capability >= 100 with CUDA >= 12.8 (csrc/quantization/fp4/nvfp4_scaled_mm_entry.cu, the copy the code
index holds); below it Marlin from 0.9.0 (``use_marlin = not cutlass_fp4_supported() and is_fp4_marlin_supported()``,
modelopt.py@0.9.0; ``is_fp4_marlin_supported``: capability >= 80, marlin_utils_fp4.py@0.10.1). At 0.10.1 the linear
method prefers FlashInfer's CUTLASS whenever ``has_flashinfer()``, on any card; FlashInfer is an extra of the pip
package before 0.11.1 (``mxfp4``), so a bare install takes Marlin there, as sized here. 0.8.x has no Marlin path and
swizzles on every card. An unknown card (capability None) is sized on the kernel that keeps more bytes (``kernel``):
CUTLASS, except for compressed-tensors experts on 0.9.2-0.11.0 (below).

compressed-tensors' NVFP4 (``nvfp4-pack-quantized``: weights ``num_bits`` 4, ``type`` float, llm-compressor's layout)
allocates the same: ``CompressedTensorsW4A4Fp4.create_weights`` registers ``weight_packed`` uint8 ``[out, in / 2]`` and
``weight_scale`` float8_e4m3fn ``[out, in / group_size]`` plus float32 global scales (compressed_tensors_w4a4_nvfp4.py
@0.10.1 l.43-84); through 0.10.1 it adds ``weight_scale_swizzled`` beside the loaded scales (l.140-142), from 0.10.2 it
replaces them (``layer.weight_scale = Parameter(swizzled_weight_scale)``, @0.10.2 l.119, @0.13.0 l.158; 0.16.0
``convert_to_nvfp4_linear_kernel_format``). Without CUTLASS FP4 the config runs ``CompressedTensorsW4A16Fp4``
(compressed_tensors.py@0.9.2 l.395-402, @0.10.1 l.431-438), Marlin, one copy (``prepare_fp4_layer_for_marlin``,
compressed_tensors_w4a16_nvfp4.py@0.10.1, which deletes ``weight_packed`` first); a weight-only checkpoint runs that
scheme on every card (``_is_fp4a16_nvfp4``, compressed_tensors.py@0.9.2 l.373-374, @0.14.0 l.571). Which releases
take the layout at all is ``quant_ct_fp4.scheme_problem`` (W4A4 from 0.9.2, weight-only experts from 0.14.0).

Its routed experts (``CompressedTensorsW4A4MoeMethod.create_weights``, compressed_tensors_moe.py@0.9.2 l.103-193,
the same through ``W4A4Nvfp4MoEMethod`` @0.19.0 l.395 and compressed_tensors_moe/compressed_tensors_moe_w4a4_nvfp4.py
@0.20.0-@0.34.0): ``w13_weight_packed`` uint8 [E, 2 x inter, hidden / 2], ``w2_weight_packed`` [E, hidden, inter / 2],
``w13_weight_scale`` / ``w2_weight_scale`` float8_e4m3fn at ``/ 16``, float32 ``*_weight_global_scale`` and
``*_input_global_scale`` ([E, 2] and [E]): ModelOpt's expert bytes. ``process_weights_after_loading``:
- 0.9.2-0.11.0 rename the packed weights by a second Parameter on the same storage (``layer.w13_weight =
  Parameter(layer.w13_weight_packed.data)``) and leave ``w13_weight_packed`` registered (@0.9.2 l.221-225, @0.10.1,
  @0.11.0). On CUTLASS that costs nothing, and the scales are ModelOpt's: ``w13_blockscale_swizzled`` beside the
  loaded ones through 0.10.1 (@0.9.2 l.245-251), replacing them from 0.10.2. On Marlin (capability below 100)
  ``prepare_moe_fp4_layer_for_marlin`` repacks every expert into a new tensor (``gptq_marlin_repack`` per expert,
  ``torch.cat``, ``setattr(layer, "w13_weight", ...)``, utils/marlin_utils_fp4.py@0.9.2 l.164-206, @0.11.0, same
  size), while ``w13_weight_packed`` still holds the loaded storage: the packed experts stay twice, 1 B a weight
  instead of 0.5, with one copy of the scales (repacked to float8, one per group, l.208-234).
- from 0.11.1 ``delattr(layer, "w13_weight_packed")`` follows the rename (compressed_tensors_moe.py@0.11.1 l.312, the
  wheel; @0.12.0 l.338, @0.19.0 l.519; 0.34.0 ``move_parameter`` registers one object under both names,
  model_executor/utils.py@0.34.0 l.288-300): one copy, and from 0.14.0 the same ``convert_to_nvfp4_moe_kernel_format``
  as ModelOpt's.
FlashInfer's reordering (``reorder_w1w3_to_w3w1``, a new w13 beside the packed one through 0.11.0) runs only with
VLLM_USE_FLASHINFER_MOE_FP4=1 (``is_flashinfer_fp4_cutlass_moe_available``, utils/flashinfer_fp4_moe.py@0.11.0
l.26-31), which the sizing does not read.

Left out, and why: the float32 per-tensor scales (about three floats per fused shard after loading, kilobytes per
model); the swizzle's padding (rows to 128, scale columns to 4: none where a rank's output rows are a multiple of 128
and its input a multiple of 64, as in Llama-3.3-70B and Qwen3-235B-A22B up to TP 8); Marlin's per-layer workspace
(a few kilobytes); FlashInfer TRT-LLM layouts and FBGEMM (opt-in through environment variables). Not read: the
routed experts' per-backend conversions from 0.14.0 (``convert_to_nvfp4_moe_kernel_format``; fused_moe/oracle/nvfp4.py
@0.30.0 has b12x, CuTe DSL, TRT-LLM and CUTLASS branches) beyond their ``replace_parameter`` of one scale copy.
Which of them ``select_nvfp4_moe_backend`` picks on a Blackwell card is not modelled, and FlashInfer's TRT-LLM one
(first in its list) pads the experts: the per-rank intermediate to a multiple of 16 (gated) from 0.17.0, of 64 from
0.26.0 (``align_fp4_moe_weights_for_fi``, utils/flashinfer_fp4_moe.py@0.17.0 l.251, @0.26.0 l.362), the hidden size to
a multiple of 256 from 0.20.0 (``align_trtllm_fp4_moe_hidden_dim_for_fi``, utils/flashinfer_utils.py@0.20.0 l.271).
Where those shapes are already aligned nothing is padded whichever backend runs; elsewhere ``moe_padding_problem``
says the weights cannot be predicted (0.12.0-0.13.0 pad ModelOpt's CUTLASS path only for non-gated experts, which no
modelled architecture has).
"""

from __future__ import annotations

from typing import Literal

from vllm_remedy.vllm.catalog import ModelSpec
from vllm_remedy.vllm.quant_ct_fp4 import FloatGroupSize, scheme_problem

Version = tuple[int, int, int]
Kernel = Literal["cutlass", "marlin"]
DEFAULT_GROUP = 16  # ModelOptNvFp4Config.from_config's default, modelopt.py@0.10.0-@0.34.0
SCALE_BYTES = 1  # float8_e4m3fn
PACKED_BYTES = 0.5  # two 4-bit values per uint8
CUTLASS_CAPABILITY = 100  # cutlass_scaled_mm_supports_fp4
MARLIN_SINCE: Version = (0, 9, 0)
BOTH_KEPT_UNTIL: Version = (0, 10, 1)  # the loaded scales stay beside the swizzled copy
METHODS = frozenset({"modelopt", "modelopt_fp4"})  # config.json's spelling / hf_quant_config.json's mapping
CT_PACKED_KEPT: tuple[Version, Version] = ((0, 9, 2), (0, 11, 1))  # w13_weight_packed left registered (Marlin: twice)


def _ct(model: ModelSpec) -> FloatGroupSize | None:
    """The compressed-tensors 4-bit float group of the checkpoint, or None for any other."""
    if model.quantization == "compressed-tensors" and isinstance(model.group_size, FloatGroupSize):
        return model.group_size
    return None


def applies(model: ModelSpec) -> bool:
    """Whether the checkpoint's packed layers are NVFP4: ModelOpt's (4-bit, either spelling of the method) or
    compressed-tensors' (4-bit float weights, ``quant_ct_fp4.FloatGroupSize``), dense and routed experts alike."""
    if not model.quantized_checkpoint or model.weight_bits != 4:
        return False
    return model.quantization in METHODS or _ct(model) is not None


def problem(model: ModelSpec, version: Version, capability: tuple[int, int] | None) -> str | None:
    """Why this release cannot build the checkpoint's compressed-tensors NVFP4 layers on this card
    (``quant_ct_fp4``), or None."""
    group = _ct(model) if applies(model) else None
    return None if group is None else scheme_problem(group, version, model.is_moe, capability)


def _extra_per_packed(model: ModelSpec, version: Version, kind: Kernel) -> float:
    """Bytes over 0.5 per packed weight on this kernel, averaged over the packed weights: scale copies, and the
    experts' second packed copy (compressed-tensors on Marlin, 0.9.2-0.11.0); used to pick an unknown card's kernel."""
    scales = scale_copies(version, kind) * SCALE_BYTES / (model.group_size or DEFAULT_GROUP)
    experts = model.expert_params_b / model.params_b if model.params_b else 0.0
    return scales + (PACKED_BYTES * experts if _packed_twice(model, version, kind) else 0.0)


def kernel(model: ModelSpec, version: Version, capability: tuple[int, int] | None) -> Kernel:
    """The FP4 kernel the packed layers run: CUTLASS at capability 100 and above, Marlin below it from 0.9.0 (0.8.x has
    no Marlin path); compressed-tensors' weight-only layout is Marlin on every card (``W4A16Fp4``). An unknown card
    (capability None) takes whichever keeps more bytes."""
    group = _ct(model)
    if group is not None and not group.activations:
        return "marlin"
    if version < MARLIN_SINCE:
        return "cutlass"
    if capability is not None:
        return "marlin" if capability[0] * 10 + capability[1] < CUTLASS_CAPABILITY else "cutlass"
    kinds: tuple[Kernel, Kernel] = ("cutlass", "marlin")
    return max(kinds, key=lambda kind: _extra_per_packed(model, version, kind))


def scale_copies(version: Version, kind: Kernel) -> int:
    """Copies of the FP8 group scales left on the card after loading (module docstring)."""
    return 2 if version <= BOTH_KEPT_UNTIL and kind == "cutlass" else 1


def overhead(model: ModelSpec, version: Version, capability: tuple[int, int] | None) -> float:
    """An NVFP4 weight's bytes over 0.5: the FP8 scales of its group, once per copy kept."""
    group = model.group_size or DEFAULT_GROUP
    return 1 + scale_copies(version, kernel(model, version, capability)) * SCALE_BYTES / group / PACKED_BYTES


def _packed_twice(model: ModelSpec, version: Version, kind: Kernel) -> bool:
    since, until = CT_PACKED_KEPT
    return _ct(model) is not None and model.is_moe and kind == "marlin" and since <= version < until


def duplicate_expert_bytes(model: ModelSpec, version: Version, capability: tuple[int, int] | None) -> float:
    """Bytes of the routed experts' second packed copy on the whole model (module docstring: compressed-tensors on
    Marlin, 0.9.2-0.11.0, where ``get_moe_method`` quantizes every expert whatever ``ignore`` says), else 0."""
    if not applies(model) or not _packed_twice(model, version, kernel(model, version, capability)):
        return 0.0
    return model.expert_params_b * 1e9 * PACKED_BYTES


TRTLLM_INTER_ALIGN: tuple[tuple[Version, int], ...] = (((0, 17, 0), 16), ((0, 26, 0), 64))  # gated experts
TRTLLM_HIDDEN_ALIGN_SINCE: Version = (0, 20, 0)
TRTLLM_HIDDEN_ALIGN = 256


def moe_padding_problem(model: ModelSpec, tp: int, version: Version, capability: tuple[int, int] | None) -> str | None:
    """Why an NVFP4 MoE's expert bytes cannot be predicted on this card and release, or None: FlashInfer's TRT-LLM
    layout would pad a shape that is not aligned, and whether that backend runs is not modelled (module docstring)."""
    cap = None if capability is None else capability[0] * 10 + capability[1]
    if not applies(model) or not model.num_experts or (cap is not None and cap < CUTLASS_CAPABILITY):
        return None
    align = next((a for since, a in reversed(TRTLLM_INTER_ALIGN) if version >= since), None)
    inter = (model.moe_intermediate_size or model.intermediate_size) // tp
    hidden_pad = version >= TRTLLM_HIDDEN_ALIGN_SINCE and model.hidden_size % TRTLLM_HIDDEN_ALIGN
    if (align is None or inter % align == 0) and not hidden_pad:
        return None
    return (f"the NVFP4 experts' shapes (hidden {model.hidden_size}, {inter} intermediate per GPU) are padded by "
            "FlashInfer's TRT-LLM MoE layout on this card and release (align_fp4_moe_weights_for_fi / "
            "align_trtllm_fp4_moe_hidden_dim_for_fi) and not by the other backends; which one vLLM picks "
            "(select_nvfp4_moe_backend) is not modelled")
