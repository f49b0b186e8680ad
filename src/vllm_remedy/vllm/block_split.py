"""Whether an fp8 block-quantized checkpoint (``quantization_config.weight_block_size``: DeepSeek-V3, Qwen3 FP8) keeps
whole blocks on every TP rank, as vLLM checks while creating the weights. Apart from ``quant_config`` (AWQ's group
rule) because the block has two sides, one per split direction, and the check changed by release."""

from __future__ import annotations

from collections.abc import Sequence

from vllm_remedy.vllm.catalog import ModelSpec

#: The first release whose fp8 method reads ``weight_block_size`` (fp8.py@0.6.6; absent @0.6.5).
FIRST_BLOCK_RELEASE = (0, 6, 6)
#: From this release a column-parallel layer with more than one output partition (QKV, gate_up) whose partitions are
#: not whole blocks is let through (``ColumnParallelLinear._maybe_allow_fp8_block_shape_mismatch``, linear.py@0.14.0,
#: called before ``create_weights``; @0.34.0 the same), so only the row-parallel inputs are refused.
MERGED_ALLOWED_FROM = (0, 14, 0)


def fp8_block_split_problem(block: tuple[int, int] | None, tp: int, version: tuple[int, int, int] | None,
                            row_inputs: Sequence[tuple[str, int]],
                            column_outputs: Sequence[tuple[str, int]]) -> str | None:
    """Why vLLM refuses this TP for an fp8 checkpoint quantized in ``block`` = (block_n, block_k) blocks, or None.

    Read in ``Fp8LinearMethod.create_weights`` (fp8.py@0.6.6, @0.8.5) and ``validate_fp8_block_shape``
    (utils/fp8_utils.py@0.13.0, @0.34.0): a row-parallel layer's input per rank (``row_inputs``: o_proj, down_proj,
    whole widths) must be a multiple of block_k, and below ``MERGED_ALLOWED_FROM`` a merged column-parallel layer's
    every output partition per rank (``column_outputs``: q, k/v, gate/up, per-rank widths) a multiple of block_n.
    The routed experts' check (``validate_fp8_block_shape_moe``: the intermediate per partition, which expert
    parallelism leaves whole, ``FusedMoEParallelConfig.make`` fused_moe/config.py@0.10.0) is not judged: the start's
    --enable-expert-parallel is not among the settings the estimate reads. Judged only with the release known and
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
