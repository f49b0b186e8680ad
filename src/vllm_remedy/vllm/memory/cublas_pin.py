"""When the cold compile's freed embedding copy stays pinned through vLLM 0.27-0.30's profile
(``terms.pinned_compile_gib``): the first cuBLAS call of the profile allocates torch's cuBLAS workspace, which never
frees, and without a split limit the caching allocator carves it from the best-fitting free block. When the blocks
the profile's own activations left are smaller than the workspace, that block is the autotuner's freed table copy,
whose whole segment then outlives ``empty_cache`` and is counted again as consumed memory.

What is read from source:
  * the workspace: ``setCublasWorkspace`` / ``getNewWorkspace`` (aten/src/ATen/cuda/CublasHandlePool.cpp) allocate
    it through the CUDA caching allocator at the first cuBLAS call on a (device, stream) and keep it in a static map
    for the life of the process; cuBLASLt shares it by default (pytorch#168175, #173002). Its default size,
    ``parseChosenWorkspaceSize``: ":4096:2:16:8" = 4096 KiB x 2 + 16 KiB x 8 = 8,519,680 B, and 32 MiB on compute
    capability major 9 and 10 and 12 (Hopper, Blackwell: pytorch#175344 of February 2026, whose revert #182669 was
    closed unmerged) and 11 (pytorch#189312, July 2026). vLLM 0.27.1, 0.28.0, 0.29.0 and 0.30.0 all require
    torch==2.13.0 (their wheels' METADATA; the kubesimplify RTX PRO 6000 0.27.1 log prints "torch 2.13.0+cu130").
    The file as tagged for 2.13.0 was not read: the sizes are main's after those PRs.
  * the carve: without ``max_split_size_mb`` (unset through vLLM 0.30's profile, gpu_worker.py@0.27.1-0.30.0)
    ``get_free_block`` returns the smallest free block of at least the request and ``should_split`` splits any large
    block, so a small persistent request can land in a freed multi-GiB block; ``release_blocks`` (``empty_cache``)
    frees only segments without a live block (c10/cuda/CUDACachingAllocator.cpp). vLLM 0.31.0's comment on the split
    limit it adds around ``profile_run`` describes exactly this ("a later small allocation can be carved out of a
    freed multi-GiB block and pin the whole segment past the empty_cache()", v1/worker/gpu_worker.py@0.31.0).
  * the order: the autotuner's copy is freed when the compile ends (``generate_and_run_autotune_block``, torch
    inductor codegen/wrapper.py), before the profile's forward makes the first GEMM (Qwen3's first matmul is
    qkv_proj; an AWQ model's is the unquantized lm_head in ``_dummy_sampler_run``). Not checked: that no cuBLAS
    call before the profile (loading, the compile) already made the workspace, elsewhere.

What is NOT derived (post hoc): that the workspace lands in the table copy exactly when the hidden-state batch the
profile works on (mnbt x hidden x activation bytes, the embedding lookup's output) is smaller than the workspace.
The blocks the compile and forward free besides the copy are sized by that batch (the allocator gives a request of
10 MiB or more its own segment, rounded to 2 MiB; smaller ones share 20 MiB segments, where whether the workspace
still fits depends on what is live). The condition was chosen after seeing the logs; it separates all eight cold
0.27-0.30 starts whose advisory line shows whether the copy stayed, with no constant fitted: pinned at 4.0 MiB
(Qwen3-8B, mnbt 512) and 3.5 MiB (Qwen2.5-0.5B, mnbt 2048) on capability 8.9 with 8.125 MiB of workspace and at
20 MiB (Qwen3-14B-AWQ and Qwen3-32B-AWQ, mnbt 2048) on capability 12.0 with 32 MiB; not at 14, 16 and 32 MiB (x2) on
8.9. An allocation trace of one start would settle it.
"""

from __future__ import annotations

from vllm_remedy.vllm.catalog import GIB, ModelSpec
from vllm_remedy.vllm.memory.resolved import Resolved

MIB = 1024 * 1024
# torch's default cuBLAS workspace, CUBLAS_WORKSPACE_CONFIG ":4096:2:16:8" (CublasHandlePool.cpp): below Hopper
DEFAULT_WORKSPACE_BYTES = 4096 * 1024 * 2 + 16 * 1024 * 8
# on compute capability major 9, 10, 11, 12 (the same file from pytorch#175344 and #189312), and read for any newer
# or unknown card: the larger workspace pins in more starts, which charges more and errs toward less KV
LARGE_WORKSPACE_BYTES = 32 * MIB
LARGE_WORKSPACE_SINCE_MAJOR = 9


def workspace_bytes(capability: tuple[int, int] | None) -> int:
    """torch 2.13's default cuBLAS workspace on this card; the larger one for an unknown card (the safe side)."""
    if capability is None or capability[0] >= LARGE_WORKSPACE_SINCE_MAJOR:
        return LARGE_WORKSPACE_BYTES
    return DEFAULT_WORKSPACE_BYTES


def profile_batch_bytes(model: ModelSpec, res: Resolved) -> int:
    """The profile forward's hidden-state batch: mnbt tokens x the full hidden size (the vocab-parallel lookup's
    output is all-reduced, so TP does not split it) x the activation dtype."""
    return res.mnbt * model.hidden_size * res.weight_dtype_bytes


def carves_table(model: ModelSpec, res: Resolved, capability: tuple[int, int] | None) -> bool:
    """Whether the cuBLAS workspace is read to land in the freed table copy (module docstring: post hoc); always on an
    unknown card, where which workspace and which blocks are not known (charged: the side of less KV)."""
    return capability is None or profile_batch_bytes(model, res) < workspace_bytes(capability)


# From 0.27.0 the budget is the drop in free device memory since the worker's snapshot plus the transient peak
# (utils/mem_utils.py@0.27.0 ``memory_profiling``: ``total_consumed`` + ``transient_peak_headroom``, the latter the
# torch peak less what is still allocated). The snapshot is taken after NCCL's init (v1/worker/gpu_worker.py@0.28.0
# ``init_device``), before any cuBLAS call, and the workspace stays allocated to the end, so it is charged once, as
# consumed memory, never as headroom. Nothing else charges it there: ``non_torch``'s TP-1 figure was read as "non-torch
# memory" (used less torch-reserved memory) on 0.18-0.19 logs, which excludes a torch allocation, and the activation
# terms size the forward's transients. Post hoc: written after the warm RTX 5090 0.28.0 Qwen3-32B-AWQ start's
# remaining gap was seen to match 32 MiB. The torch those releases require was read for 0.27.1-0.30.0 (2.13.0, above);
# 0.27.0 and 0.31+ take the same sizes unread.
CONSUMED_WORKSPACE_SINCE = (0, 27, 0)


def consumed_workspace_gib(res: Resolved, capability: tuple[int, int] | None, pinned_copy_gib: float) -> float:
    """The cuBLAS workspace as consumed memory from 0.27.0 (``CONSUMED_WORKSPACE_SINCE``), per rank, where it is not
    already inside the pinned table copy (``pinned_copy_gib`` > 0, ``terms.pinned_compile_gib``).

    Only the 32 MiB workspace (capability 9 and up, or unknown): at 10 MiB or more the allocator gives it its own
    segment unless a free block of 32 MiB or more is cached (``get_allocation_size``, ``get_free_block``), and none is
    when the profile starts (``memory_profiling`` empties the cache; the load, under the 20 MiB split limit, leaves free
    rests only below 20 MiB; not checked: a freed segment of 32 MiB or more carved again before the profile); a block
    the profile freed before its first GEMM stays pinned by it whole, so 32 MiB is the least charged. 0.34 measures
    the same consumed memory after warm-up (v1/worker/extensible_kv_cache.py@0.34.0 ``measure_kv_cache_bytes``).
    The 8.125 MiB one (below capability 9) takes the best-fitting cached block, a free rest of a segment that was
    already charged (nothing more) or else a new 20 MiB segment: which, the inputs do not tell, so nothing is
    charged."""
    if res.rules.version < CONSUMED_WORKSPACE_SINCE or pinned_copy_gib > 0:
        return 0.0
    if capability is not None and capability[0] < LARGE_WORKSPACE_SINCE_MAJOR:
        return 0.0
    return LARGE_WORKSPACE_BYTES / GIB
