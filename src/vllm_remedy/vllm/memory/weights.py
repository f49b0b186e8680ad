"""Per-rank weight memory: each part of a checkpoint at its own stored width, plus the buffers loading leaves.

Moved out of ``terms`` (which keeps the profiled activation and graph terms): the weight side is a group of its own,
read by the estimate (``core``), the activation terms (``mxfp4_backend``) and the rehearsal pod (``adapters``).
"""

from __future__ import annotations

from vllm_remedy.vllm.catalog import GIB, ModelSpec
from vllm_remedy.vllm.memory import awq_marlin_load, mla_absorbed, mxfp4, nvfp4
from vllm_remedy.vllm.memory.alloc_tail import load_max_split, weight_floor_gib, weight_tail_gib
from vllm_remedy.vllm.memory.resolved import Resolved
from vllm_remedy.vllm.memory.unmodelled import CannotPredict
from vllm_remedy.vllm.memory.weight_scales import channel_scale_gib

# Weights: logged "Model loading took" is params x bytes / TP plus 0.01-0.09 GiB of buffers (rotary
# caches, padding) across the calibration logs; 0.10 covers them all.
WEIGHT_BUFFERS_GIB = 0.10
# 4-bit checkpoints carry per-group scales and zero points. GPTQ/AWQ layouts (vllm gptq.py / awq.py
# `create_weights`): int32 `qweight` packs 8 values (0.5 B per weight), fp16 `scales` [in/group, out] (2 B per group)
# and int32 `qzeros` packing 8 zero points (0.5 B per group): (2 + 0.5) / 128 B on 0.5 B at group 128 = +3.9 %.
# It was a rounded +6 %; logged weights (Qwen2.5-7B-AWQ 5.20 GiB, Phi-4 GPTQ 8.51, Llama-3.1-8B w4a16 5.38) stay
# at or below the new sizing (5.29, 8.61, 5.44 with the 0.10 buffers).
# The group is the config's (``quant_config.group_size``): 128 by default, 32 for some QAT exports (four times the
# scales), per output channel for GPTQ's -1 (negligible scales).
INT4_GROUP_SIZE = 128


def int4_overhead(group_size: int | None, zero_points: bool) -> float:
    """Packed 4-bit weights' size over 0.5 B per weight: fp16 scales and, unless symmetric compressed-tensors
    (compressed_tensors_wNa16.py@0.10.0 registers ``weight_zero_point`` only when not symmetric), int32-packed zero
    points, per group of ``group_size`` input channels; per output channel (None) they are negligible."""
    if group_size is None:
        return 1.0
    return 1 + (2 + (0.5 if zero_points else 0.0)) / group_size / 0.5


# mxfp4 (gpt-oss experts): sized per kernel backend in ``mxfp4.expert_bytes`` (the backend from GPU and version).
# gpt-oss-120b on an H100 gives 65.90 GiB on Marlin (logged 65.97 on 0.10.1, vllm#23278) and 64.40 on Triton
# (logged 64.38 on 0.14.1, vllm#33155, and on 0.16.0 in tests/data/calibration).


def weight_bits(model: ModelSpec, quantization: str | None, dtype_bytes: int) -> int:
    """Bits per stored weight: the checkpoint's quantization, else online ``--quantization fp8``, else dtype."""
    if model.quantized_checkpoint:
        return model.weight_bits
    if quantization == "fp8":  # the others refuse a checkpoint without a section or are not sized (quant_flag)
        return 8
    if quantization in ("bitsandbytes",):
        return 4
    return 8 * dtype_bytes


def mxfp4_backend(model: ModelSpec, res: Resolved, capability: tuple[int, int] | None) -> mxfp4.Backend | None:
    """The MoE kernel backend of an mxfp4 checkpoint (``mxfp4.backend``); None for any other model."""
    if model.quantized_scope != "experts" or not model.quantization or model.weight_bits >= 16:
        return None
    return mxfp4.backend(capability, res.rules.version)


def weights_gib(
    model: ModelSpec, res: Resolved, quantization: str | None, capability: tuple[int, int] | None = None
) -> float:
    """Per-rank weight memory, each part at its own width: packed weights where the checkpoint packs them (with zero
    points unless symmetric compressed-tensors; NVFP4 with its FP8 group scales and copies, ``nvfp4``), 16-bit
    embeddings, MoE router gates (built with ``quant_config=None``: qwen3_moe.py, qwen2_moe.py, mixtral.py,
    deepseek_v2.py, llama4.py@0.10.0; Qwen3-MoE's with it from 0.10.1, packed where a ModelOpt checkpoint stores it
    so: ``_router_packed``) and vision tower, mxfp4 experts as the
    GPU's backend lays them out, an 8-bit compressed-tensors channel checkpoint's float32 scales (``weight_scales``)."""
    bits = weight_bits(model, quantization, res.weight_dtype_bytes)
    params = model.params_b * 1e9
    backend = mxfp4_backend(model, res, capability)
    if bits >= 16:
        total = params * bits / 8
    elif backend is not None:
        experts = model.expert_params_b * 1e9
        rank_experts = mxfp4.expert_bytes(model, res.tp, backend, res.rules.version)
        return ((params - experts) * 2 / res.tp + rank_experts) / GIB + WEIGHT_BUFFERS_GIB
    else:
        embed = model.vocab_size * model.hidden_size * (1 if model.tie_word_embeddings else 2)
        router = model.num_layers * model.hidden_size * model.num_experts  # MoE gates: built with quant_config=None
        if _router_packed(model, res):
            router = 0  # a quantized router stored packed: sized with the packed layers
        kept = embed + router + model.vision_params_b * 1e9
        overhead = (nvfp4.overhead(model, res.rules.version, capability) if nvfp4.applies(model)
                    else int4_overhead(model.group_size, model.zero_points))  # NVFP4: FP8 scales, no zero points
        if problem := (nvfp4.problem(model, res.rules.version, capability)
                       or nvfp4.moe_padding_problem(model, res.tp, res.rules.version, capability)):
            raise CannotPredict(f"cannot predict {model.name}: {problem}")
        left, other = _excluded(model, res)
        body = (params - kept - left - sum(p for p, _, _ in other)) * bits / 8 * (overhead if bits <= 4 else 1.0)
        body += nvfp4.duplicate_expert_bytes(model, res.rules.version, capability)  # CT experts on Marlin to 0.11.0
        body += sum(p * b / 8 * (int4_overhead(g, model.zero_points) if b <= 4 else 1.0) for p, b, g in other)
        total = kept * 2 + left * res.weight_dtype_bytes + body
    # The flat buffers stand for the rotary cache and the allocator's padding; where those, sized, exceed it
    # (large-tailed shapes, e.g. FP8 32B models: ``alloc_tail``), the sized figure is charged instead.
    online = bits < 16 and not model.quantized_checkpoint
    floor = weight_floor_gib(model, res.tp, bits, res.weight_dtype_bytes, online, res.rules.version)
    if awq_marlin_load.applies(model, quantization, capability, res.rules.version, res.tp):
        # An AWQ load on Marlin frees and re-allocates mid-size tensors: replayed, its overhead replaces the tails.
        floor += awq_marlin_load.overhead_gib(model, res.tp, res.weight_dtype_bytes, res.rules.version) - \
            weight_tail_gib(model, res.tp, bits, res.weight_dtype_bytes, load_max_split(res.rules.version))
    scales = channel_scale_gib(model, res.tp)  # 8-bit channel checkpoints' float32 scales, not in params_b
    absorbed = mla_absorbed_bytes(model, res, quantization, capability)[0] / GIB  # MLA's own copies (mla_absorbed)
    return total / res.tp / GIB + scales + absorbed + max(WEIGHT_BUFFERS_GIB, floor)


def _excluded(model: ModelSpec, res: Resolved) -> tuple[float, tuple[tuple[float, int, int | None], ...]]:
    """The checkpoint's layers this release leaves unquantized and those a GPTQ ``dynamic`` rule packs at other bits
    (``quant_exclusions``); "cannot predict" where the release's skip rule is not modelled for this model."""
    split = model.exclusions.at(res.rules.version) if model.exclusions is not None else None
    if split is None:
        return 0.0, ()
    if split.problem is not None:
        raise CannotPredict(f"cannot predict {model.name}: {split.problem}")
    return split.unquantized, split.overrides


def _router_packed(model: ModelSpec, res: Resolved) -> bool:
    """Whether this release builds the MoE router with the quantization config and the checkpoint stores it packed
    (ModelOpt: ``quant_modelopt_skip``; Qwen3-MoE's gate from 0.10.1, ``quant_layers.LAYOUTS``): one of the packed
    layers then, not 16-bit."""
    split = model.exclusions.at(res.rules.version) if model.exclusions is not None else None
    return split is not None and split.problem is None and split.router_packed


def mla_absorbed_bytes(model: ModelSpec, res: Resolved, quantization: str | None,
                       capability: tuple[int, int] | None) -> tuple[int, str | None]:
    """What MLA's ``process_weights_after_loading`` keeps beside the weights on a rank (``mla_absorbed``)."""
    bits = weight_bits(model, quantization, res.weight_dtype_bytes)
    return mla_absorbed.extra_bytes(model, res.mla, res.rules.version, res.tp, res.weight_dtype_bytes, quantization,
                                    bits, capability)
