"""The unsplit tails PyTorch's caching allocator leaves on each large weight tensor, counted as allocated memory.

vLLM's "Model loading took" is ``torch.cuda.max_memory_allocated`` after ``empty_cache`` and a peak reset, taken
before and after loading (``DeviceMemoryProfiler`` in vllm/utils/__init__.py and ``CudaPlatform.
get_current_memory_usage`` in platforms/cuda.py, both @0.11.0; the same at 0.10.2), and the profile subtracts that
figure from the budget. The allocator (c10/cuda/CUDACachingAllocator.cpp, torch 2.8 as pinned by vLLM 0.10.2 and
0.11.0) serves a request of 10 MiB or more (``kMinLargeAlloc``) from a new segment rounded up to 2 MiB
(``kRoundLarge``, ``get_allocation_size``) and splits the rest off only if it exceeds 1 MiB (``should_split``:
``remaining > kSmallSize``); otherwise the block keeps the tail and ``allocated_bytes`` grows by ``block->size``, the
tail included. Weights are allocated at model construction, each its own segment, so a linear weight whose size is
an odd number of MiB (a 5120 x 5120 FP8 matrix: 25 MiB) is charged one MiB more. 16-bit matrices of the usual
power-of-two-rich shapes are even MiB multiples; halving them to FP8 makes many odd.

Checked, post hoc, on the two held-out FP8 32B starts that exposed it: DeepSeek-R1-Distill-Qwen-32B-FP8
(compressed-tensors, L40S, 0.11.0) logs 32.1993 GiB where the tensors themselves take 32.014 (qkv 35, o 25, down 135
MiB per layer: +3 MiB x 64, embed and lm_head 1485 MiB each: +2 = 0.189 GiB; 32.203, 4 MiB above the log, which the
reuse of the rotary cache's freed float32 temporaries by a few later qkv/o weights accounts for), and Qwen3-32B-FP8
(block-wise, H100, 0.10.2) logs 32.0418 where the tensors take 31.979 (down 125 MiB: +1 x 64, embeddings +0.25 x 2 =
0.063 GiB; 32.042). Freed blocks reused by later weights (the rotary temporaries above) are not modelled: that errs
toward more weight memory, i.e. less KV. With expandable segments ``should_split`` splits any rest of 512 B or more
(no tails); vLLM does not enable them (0.10.2-0.34.0 set no PYTORCH_CUDA_ALLOC_CONF), so that case is not modelled.
``weights.weights_gib`` charges this floor (tails + rotary cache) where it exceeds the flat ``WEIGHT_BUFFERS_GIB``.

Checked, not fitted, on the other logs whose floor exceeds the flat 0.10 (logged -> charged GiB): Qwen2.5-32B TP 2
(L40S, 0.7.1) 30.710 -> 30.709, R1-Distill-Qwen-14B TP 2 (0.7.2) 13.948 -> 13.951, Qwen2.5-14B TP 2 (0.7.2) 13.928 ->
13.928, Qwen2.5-32B TP 4 (0.18.1) 15.39 -> 15.391, Qwen2.5-Coder-32B-AWQ (0.13.0) 18.142 -> 18.135, Seed-OSS-36B TP 2
(0.11.2; 524,288-position rotary cache) 33.857 / 33.794 -> 33.855, its float32 start 67.590 -> 67.585. One exception:
its W8A8 int8 start logs 17.711 against 17.855 charged, as if the tails had not been kept (not identified; errs toward
less KV).

From 0.21.0 vLLM loads the model with the split limit at 20 MiB: ``Worker.load_model`` wraps
``model_runner.load_model`` (construction, weight loading and ``process_weights_after_loading``) in
``_scoped_allocator_max_split(max_split_size_mb=20)`` (v1/worker/gpu_worker.py@0.21.0, and in every wheel read
since: 0.22.0, 0.26.0, 0.27.1, 0.28.0, 0.29.0, 0.31.0, 0.32.0, 0.34.0; absent at 0.20.1 and 0.20.2). ``should_split``
splits a large-pool block only if the request is below ``max_split_size`` (``(size < max_split_size()) && (remaining
> kSmallSize)``, c10/cuda/CUDACachingAllocator.cpp as stored at pytorch commit 001074d; later allocators found by
code search test ``AcceleratorAllocatorConfig::max_split_size()`` the same way; torch 2.13, which 0.28.0 pins, was
not read), so a weight of 20 MiB or more keeps its whole rest to the 2 MiB rounding (up to 2 MiB less 512 B), not
only a rest of 1 MiB or less.
A Qwen3-14B or -32B down_proj in 4-bit (17,408 or 25,600 x 5,120: 42.5 and 62.5 MiB) carries 1.5 MiB per layer. The
cached-block path does not shrink it: an oversize request takes only an oversize cached block (``get_free_block``:
no block of max_split_size or more for a smaller request, none of ``size + kLargeBuffer`` or more for a larger one),
and AWQ's repacked weight, allocated in ``process_weights_after_loading`` (``MarlinLinearKernel``, kernels/linear/
mixed_precision/marlin.py@0.28.0), finds the block its checkpoint copy just freed, of the same rounded size
(best fit). Found post hoc, reading 0.28.0 for the RTX 5090 Qwen3-AWQ over-predictions. Checked, not fitted: the
L40S 0.28.0 Qwen3-14B-AWQ write-up tabulates 9.44 GiB for the model, where the sized floor gave 9.36 (the flat 0.10
charged 9.39) and gives 9.42 with these tails; the RTX 4090 0.23.0 Qwen2.5-Coder-7B logs "Model loading took 14.29"
(24.5 MiB bf16 o_proj: +1.5 MiB x 28; 14.290 charged, 14.286 before). From 0.27 the budget counts used device memory
(``total_consumed``, utils/mem_utils.py), where an unsplit tail and a split-off free rest both count while the
segment holds a live block; only the unsplit one is derivable (a free rest may be reused by a later tensor).
"""

from __future__ import annotations

from vllm_remedy.vllm.catalog import GIB, ModelSpec

MIB = 1 << 20
K_MIN_LARGE_ALLOC = 10 * MIB  # below this a request is carved from a shared 20 MiB segment instead
K_ROUND_LARGE = 2 * MIB
K_SMALL_SIZE = MIB  # a remainder must exceed this to be split off
K_MIN_BLOCK = 512
# The split limit vLLM sets while it loads the model (``max_split_size_mb=20``, gpu_worker.py@0.21.0-0.34.0).
LOAD_MAX_SPLIT = 20 * MIB
LOAD_MAX_SPLIT_SINCE = (0, 21, 0)


def load_max_split(version: tuple[int, int, int]) -> int | None:
    """The allocator's ``max_split_size`` while this vLLM release loads weights; None where it is PyTorch's default
    (no limit)."""
    return LOAD_MAX_SPLIT if version >= LOAD_MAX_SPLIT_SINCE else None


def unsplit_tail_bytes(nbytes: int, max_split: int | None = None) -> int:
    """Bytes the allocator charges beyond a fresh ``nbytes`` request of its own segment (0 if the rest is split).
    Under a split limit (``max_split``) a request at or above it is never split, whatever its rest."""
    if nbytes < K_MIN_LARGE_ALLOC:
        return 0
    rounded = -(-nbytes // K_MIN_BLOCK) * K_MIN_BLOCK
    segment = -(-nbytes // K_ROUND_LARGE) * K_ROUND_LARGE
    remaining = segment - rounded
    if max_split is not None and rounded >= max_split:
        return remaining
    return remaining if remaining <= K_SMALL_SIZE else 0


def weight_tail_gib(model: ModelSpec, tp: int, bits: int, dtype_bytes: int, max_split: int | None = None) -> float:
    """Per-rank tails of a dense decoder's weights: qkv, o, gate_up and down at ``bits`` per weight on every layer,
    and the (64-padded, vocab-parallel) embedding and lm_head at the model dtype. Scales, biases and norms are small
    allocations (shared 2 MiB / 20 MiB segments) and are left out."""
    hidden = model.hidden_size
    q = model.num_heads * model.head_dim // tp
    kv = max(1, model.num_kv_heads // tp) * model.head_dim
    inter = model.intermediate_size // tp
    shapes = ((q + 2 * kv, hidden), (hidden, q), (2 * inter, hidden), (hidden, inter))
    per_layer = sum(unsplit_tail_bytes(rows * cols * bits // 8, max_split) for rows, cols in shapes)
    vocab = -(-model.vocab_size // 64) * 64 // tp
    embed = unsplit_tail_bytes(vocab * hidden * dtype_bytes, max_split) * (1 if model.tie_word_embeddings else 2)
    return (per_layer * model.num_layers + embed) / GIB


def weight_floor_gib(
    model: ModelSpec,
    tp: int,
    bits: int,
    dtype_bytes: int,
    online: bool = False,
    version: tuple[int, int, int] = (0, 0, 0),
) -> float:
    """What the allocator charges beyond the weights' own bytes, as far as it is sized here: the dense tails
    (``weight_tail_gib``) and the rotary cos/sin cache (``RotaryEmbedding.__init__``, rotary_embedding/base.py@0.11.0:
    [max_position, rotary_dim] cast to the model dtype; taken at the model's derived length and full head width, one
    per model as ``get_rope`` caches it). Tails are 0 for MoE and MLA models (other tensors; not sized) and for online
    quantization (the 8-bit tensors are allocated after loading, into blocks the 16-bit ones free; not sized)."""
    max_split = load_max_split(version)
    tails = 0.0 if model.is_moe or model.is_mla or online else weight_tail_gib(model, tp, bits, dtype_bytes, max_split)
    rotary = 0 if model.is_mla else model.max_model_len * model.head_dim * dtype_bytes
    return tails + rotary / GIB
