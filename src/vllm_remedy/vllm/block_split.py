"""Whether an fp8 block-quantized checkpoint (``quantization_config.weight_block_size``: DeepSeek-V3, Qwen3 FP8) keeps
whole blocks on every TP rank, as vLLM checks while creating the weights. Apart from ``quant_config`` (AWQ's group
rule) because the block has two sides, one per split direction, and the check changed by release."""

from __future__ import annotations

import math
from collections.abc import Sequence

from vllm_remedy.vllm.catalog import ModelSpec

#: The first release whose fp8 method reads ``weight_block_size`` (fp8.py@0.6.6; absent @0.6.5).
FIRST_BLOCK_RELEASE = (0, 6, 6)
#: From this release a column-parallel layer with more than one output partition (QKV, gate_up) whose partitions are
#: not whole blocks is let through (``ColumnParallelLinear._maybe_allow_fp8_block_shape_mismatch``, linear.py@0.14.0,
#: called before ``create_weights``; @0.34.0 the same), so only the row-parallel inputs are refused.
MERGED_ALLOWED_FROM = (0, 14, 0)
#: The first release with --enable-expert-parallel (engine/arg_utils.py@0.8.0; absent @0.7.3): FusedMoE then keeps
#: each expert whole (its MoE TP size 1, layer.py@0.8.0/@0.8.5; ``FusedMoEParallelConfig.make``, layer.py@0.9.0,
#: fused_moe/config.py@0.10.2).
EXPERT_PARALLEL_FROM = (0, 8, 0)
#: From this release a fused-MoE shard that splits a block is refined to a finer block when
#: gcd(block_n, block_k, width per rank, hidden) >= 32 (``refine_fp8_moe_block_shape``, fused_moe/oracle/fp8.py
#: @0.29.0, @0.34.0; absent @0.28.0), so only a shard no such block divides is refused.
MOE_REFINE_FROM = (0, 29, 0)
MOE_REFINE_MIN = 32


def fp8_block_split_problem(block: tuple[int, int] | None, tp: int, version: tuple[int, int, int] | None,
                            row_inputs: Sequence[tuple[str, int]],
                            column_outputs: Sequence[tuple[str, int]]) -> str | None:
    """Why vLLM refuses this TP for an fp8 checkpoint quantized in ``block`` = (block_n, block_k) blocks, or None.

    Read in ``Fp8LinearMethod.create_weights`` (fp8.py@0.6.6, @0.8.5) and ``validate_fp8_block_shape``
    (utils/fp8_utils.py@0.13.0, @0.34.0): a row-parallel layer's input per rank (``row_inputs``: o_proj, down_proj,
    whole widths) must be a multiple of block_k, and below ``MERGED_ALLOWED_FROM`` a merged column-parallel layer's
    every output partition per rank (``column_outputs``: q, k/v, gate/up, per-rank widths) a multiple of block_n.
    The routed experts are judged apart (``fp8_moe_block_split_problem``). Judged only with the release known and
    TP above 1 (at TP 1 a published checkpoint's own shapes are taken as loadable)."""
    if block is None or tp <= 1 or version is None or version < FIRST_BLOCK_RELEASE:
        return None
    block_n, block_k = block
    for name, channels in row_inputs:
        per_rank = channels // tp
        if channels % tp == 0 and per_rank % block_k:
            return (f"tensor-parallel-size: {tp} splits {name}'s {channels} input channels into {per_rank} per GPU, "
                    f"which the fp8 weight block {block_n}x{block_k} does not divide; vLLM: ValueError: Weight "
                    f"input_size_per_partition = {per_rank} is not divisible by weight quantization block_k = "
                    f"{block_k}.")
    if version >= MERGED_ALLOWED_FROM:
        return None
    for name, per_rank in column_outputs:
        if per_rank % block_n:
            return (f"tensor-parallel-size: {tp} leaves {name} {per_rank} output channels per GPU, which the fp8 "
                    f"weight block {block_n}x{block_k} does not divide; vLLM: ValueError: Weight "
                    f"output_partition_size = {per_rank} is not divisible by weight quantization block_n = {block_n}.")
    return None


def column_outputs(model: ModelSpec, tp: int) -> list[tuple[str, int]]:
    """Each merged column-parallel layer's output partitions per rank (``QKVParallelLinear``: q, then k and v with KV
    heads replicated to one per rank below TP = KV heads; ``MergedColumnParallelLinear``: gate and up), for
    ``fp8_block_split_problem``; MLA's projections and an MoE's experts are not listed."""
    out = []
    if not model.is_mla:
        kv_per_rank = max(model.num_kv_heads // tp, 1) * model.head_dim
        out += [("q_proj's", model.num_heads // tp * model.head_dim), ("k_proj's / v_proj's", kv_per_rank)]
    if not model.is_moe:
        out.append(("gate_up_proj's", model.intermediate_size // tp))
    return out


def expert_width_per_rank(inter: int, tp: int, version: tuple[int, int, int], expert_parallel: bool) -> int:
    """Each rank's share of a routed expert's intermediate width: FusedMoE divides it by its MoE TP size, which is the
    TP size, or 1 under expert parallelism (``EXPERT_PARALLEL_FROM``; vLLM's own data parallelism is not modelled)."""
    return inter if expert_parallel and version >= EXPERT_PARALLEL_FROM else inter // tp


def fp8_moe_block_split_problem(block: tuple[int, int] | None, tp: int, version: tuple[int, int, int] | None,
                                inter: int | None, hidden: int, expert_parallel: bool) -> str | None:
    """Why vLLM refuses this TP for an fp8 block-quantized MoE's routed experts, or None. ``Fp8MoEMethod
    .create_weights`` (fp8.py@0.6.6, @0.8.5, @0.10.2, @0.13.0; ``validate_fp8_block_shape_moe``,
    utils/fp8_utils.py@0.20.0, @0.28.0, @0.34.0) raises when the expert intermediate per partition is not a multiple
    of block_n, or, with a TP world above 1, of block_k; from ``MOE_REFINE_FROM`` only when no refined block fits.
    ``inter``: the checkpoint's moe_intermediate_size. A ``--moe-backend`` other than auto (0.34.0's padding path,
    ``resolve_fp8_moe_weight_block_shape``) is not modelled. Judged with the release known and TP above 1."""
    if block is None or not inter or tp <= 1 or version is None or version < FIRST_BLOCK_RELEASE:
        return None
    block_n, block_k = block
    per_rank = expert_width_per_rank(inter, tp, version, expert_parallel)
    if per_rank % block_n == 0 and per_rank % block_k == 0:
        return None
    whole = expert_parallel and version >= EXPERT_PARALLEL_FROM  # MoE TP size 1: no refinement for block_k
    if (version >= MOE_REFINE_FROM and not (whole and per_rank % block_n == 0)
            and math.gcd(block_n, block_k, per_rank, hidden) >= MOE_REFINE_MIN):
        return None
    side = (f"ValueError: The output_size of gate's and up's weight = {per_rank} is not divisible by weight "
            f"quantization block_n = {block_n}." if per_rank % block_n else
            f"ValueError: The input_size of down's weight = {per_rank} is not divisible by weight quantization "
            f"block_k = {block_k}.")
    how = ("keeps each expert whole" if whole else f"splits each expert's {inter} intermediate channels")
    ep = "" if whole or version < EXPERT_PARALLEL_FROM else " (--enable-expert-parallel keeps experts whole)"
    return (f"tensor-parallel-size: {tp} {how} into {per_rank} per GPU, which the fp8 weight block "
            f"{block_n}x{block_k} does not divide{ep}; vLLM: {side}")
