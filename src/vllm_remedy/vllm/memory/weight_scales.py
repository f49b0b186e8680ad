"""The float32 per-output-channel weight scales of 8-bit compressed-tensors checkpoints, part of the loaded weights.

compressed-tensors' W8A8 schemes with the ``channel`` strategy register, for every quantized linear, a
``weight_scale`` of ``torch.empty((sum(output_partition_sizes), 1), dtype=torch.float32)``: FP8 through
``create_fp8_scale_parameter`` (``ChannelQuantScaleParameter``, quantization/utils/fp8_utils.py@0.11.0, called from
``CompressedTensorsW8A8Fp8.create_weights``), int8 in ``CompressedTensorsW8A8Int8.create_weights``
(compressed_tensors_w8a8_int8.py@0.11.0, the same at 0.11.2). ``process_weights_after_loading`` keeps it as is (FP8:
``Parameter(weight_scale.data)`` after ``process_fp8_weight_channel_strategy``, a no-op off ROCm; int8: the CUTLASS
scaled-mm kernel's ``replace_parameter`` with the same data, kernels/scaled_mm/cutlass.py@0.11.0), so it is allocated
on the device with the weights and counted in "Model loading took". The rows are the layer's output partition on this
rank: a column-parallel qkv / gate_up holds its share of the outputs, a row-parallel o / down the whole hidden size
(``RowParallelLinear`` sets ``output_partition_sizes = [output_size]``, layers/linear.py@0.11.0).

The parameter count a case gives (``params_b``) does not hold them, so ``weights.weights_gib`` sized an 8-bit channel
checkpoint's linear weights at one byte each and nothing more. Found post hoc, on the held-out L40S 0.11.0
DeepSeek-R1-Distill-Qwen-32B-FP8 start: 64 x (7,168 + 5,120 + 55,296 + 5,120) x 4 B = 17.75 MiB, where the weights
were charged 15 MiB under the logged 32.1993 GiB; with them 3 MiB over it (the reuse of freed blocks that
``alloc_tail`` leaves unmodelled). Left out: block-wise FP8 scales (one float32 per 128 x 128 block, 0.02 % of the
weights; 7 MiB on a 32B model) and per-tensor scales (one float per fused partition); MoE experts' scales (their own
layouts, not read); catalog entries, which state no strategy.
"""

from __future__ import annotations

from vllm_remedy.vllm.catalog import GIB, ModelSpec

SCALE_BYTES = 4  # float32


def channel_scale_gib(model: ModelSpec, tp: int) -> float:
    """Per-rank bytes of the float32 output-channel weight scales of a dense decoder's qkv, o, gate_up and down
    (GiB); 0 unless the checkpoint is 8-bit compressed-tensors with one scale per output channel (``group_size``
    None, no weight blocks), and for MoE or MLA models (other layouts, not read)."""
    if (model.quantization != "compressed-tensors" or not model.quantized_checkpoint or model.weight_bits != 8
            or model.group_size is not None or model.weight_block_size is not None or model.is_moe
            or model.is_mla):
        return 0.0
    q = model.num_heads * model.head_dim // tp
    kv = max(1, model.num_kv_heads // tp) * model.head_dim
    inter = model.intermediate_size // tp
    rows = (q + 2 * kv) + model.hidden_size + 2 * inter + model.hidden_size  # qkv, o (row-parallel), gate_up, down
    return rows * SCALE_BYTES * model.num_layers / GIB
