"""How vLLM V1 lays the KV cache out in groups, and how each release checks that one max-length request fits.

Read from ``vllm/v1/core/kv_cache_utils.py`` and ``vllm/v1/kv_cache_interface.py`` of each release (from 0.34 the
check lives in ``kv_cache_planning.py``). Exact arithmetic, nothing fitted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from vllm_remedy.vllm.catalog import ModelSpec

# vLLM's hybrid KV-cache manager (sliding-window layers keep only their window; ``HybridKVCacheCoordinator``,
# ``_get_kv_cache_config_uniform_page_size``, on by default on CUDA: ``disable_hybrid_kv_cache_manager = False``)
# arrived in 0.9.1 (v1/core/kv_cache_coordinator.py and kv_cache_utils.py@0.9.1, @0.9.2; absent @0.9.0). Before
# it V1 converts a mixed model's sliding-window layers to full attention (``unify_hybrid_kv_cache_specs``) - but
# from 0.8.3, where V1 first gives those layers a ``SlidingWindowSpec``, only after ``check_enough_kv_cache_memory``
# has summed every layer's own need, sliding layers at their window (kv_cache_utils.py@0.8.3, @0.8.5, @0.9.0:
# ``get_kv_cache_config`` checks, then unifies): allocated as full, checked as sliding (``KvLayout.check_windows``).
HYBRID_KV_SINCE = (0, 9, 1)
SLIDING_SPEC_SINCE = (0, 8, 3)
# How many layers a group holds when the kinds differ in count (``_get_kv_cache_groups_uniform_page_size``): the
# smaller kind's count through 0.11.2; from 0.12.0 the larger one when it is under 1.25x the smaller (padding the
# short kind, v0.12.0), from 0.18.0 under 1.5x (v0.18.0).
GROUP_PAD_125_SINCE = (0, 12, 0)
GROUP_PAD_15_SINCE = (0, 18, 0)
# The "one max-length request must fit" check (``get_kv_cache_config(s)``) by release:
# - through 0.13.x ``check_enough_kv_cache_memory`` adds every layer's own need (``max_memory_usage_bytes``: all of
#   max_model_len for a full-attention layer, window - 1 + max_num_batched_tokens and one block for a sliding one;
#   from 0.26.0 the in-flight batches' tokens, ``in_flight``),
#   padding layers excluded ("layers");
# - 0.14.0 to 0.18.1 ``_max_memory_usage_bytes_from_groups`` multiplies group size x page size by the blocks of
#   ``kv_cache_groups[0]`` only, the group of the model's FIRST layer ("first_group"): for gpt-oss, whose layer 0 is
#   a 128-token sliding layer, that is the window's blocks, and a 131,072-token request passes on a cache that holds
#   0.65 of it (v0.14.0, v0.16.0; v0.18.1 still takes the first group's spec alone);
# - from 0.19.0 the same function sums the blocks of every group ("groups"; v0.19.0, v0.21.0, and v0.34.0's
#   kv_cache_planning.py).
# The suggested / auto-fitted max_model_len (``_estimate_max_model_len_from_groups``) searches with the same need.
# The "GPU KV cache size" line: through 0.20 the blocks shared out among the groups (num_blocks // groups x block
# size, ``_report_kv_cache_config``, v1/core/kv_cache_utils.py@0.19.0, @0.20.0); from 0.21.0 int(max concurrency x
# max_model_len), the concurrency being the blocks over one max-length request's blocks summed over the groups
# ("handles hybrid layouts correctly: SWA / chunked-local groups have a per-request block count that's capped by
# their window", kv_cache_utils.py@0.21.0, @0.23.0; ``get_kv_cache_capacity``, @0.26.0, @0.34.0).
LOGGED_FROM_CONCURRENCY_SINCE = (0, 21, 0)
CHECK_FIRST_GROUP_SINCE = (0, 14, 0)
CHECK_ALL_GROUPS_SINCE = (0, 19, 0)
Check = Literal["layers", "first_group", "groups"]
# Architectures whose vLLM model code makes layer 0 a sliding-window layer (gpt_oss.py: even layers slide; gemma2 /
# gemma3 / cohere2: every layer but each Nth), so their sliding group is ``kv_cache_groups[0]``. Another hybrid is
# taken to start with full attention: under the "first_group" check that is the larger need, so an unknown order
# errs toward predicting the refusal.
SLIDING_FIRST_ARCH_PREFIXES = ("GptOss", "Gemma2", "Gemma3", "Cohere2")


def check_rule(version: tuple[int, int, int]) -> Check:
    """Which need the version compares with the KV budget (see ``CHECK_FIRST_GROUP_SINCE``)."""
    if version >= CHECK_ALL_GROUPS_SINCE:
        return "groups"
    if version >= CHECK_FIRST_GROUP_SINCE:
        return "first_group"
    return "layers"


@dataclass(frozen=True)
class KvLayout:
    """How vLLM lays the KV cache out (``kv_cache_utils``): layers split into groups of equal size, one group
    per attention kind (full, or a sliding window); one block id holds a page in ``group_layers`` layers of
    every group, so a token costs a page in every group whether or not its kind needs it. ``windows`` lists the
    full-attention groups first; ``first`` is the index of the group vLLM orders first (the kind of layer 0)."""

    page_bytes: int  # one layer, one block
    group_layers: int
    windows: tuple[int | None, ...]  # per group: None for full attention, else the window
    block_size: int
    layers: tuple[int, ...] = ()  # real (unpadded) layers per group, as ``windows``; empty: ``group_layers`` each
    first: int = 0  # index in ``windows`` of vLLM's ``kv_cache_groups[0]``
    batches: int = 1  # scheduled batches a sliding group holds per request (``in_flight.batches``: 2 async, 0.26+)
    # (window, layers) per kind for the "layers" check when the allocation sized every layer as full (0.8.3-0.9.0)
    check_windows: tuple[tuple[int | None, int], ...] = ()

    @property
    def block_bytes(self) -> int:
        return self.page_bytes * self.group_layers

    def tokens(self, blocks: int) -> int:
        """ "GPU KV cache size" as vLLM logs it: blocks shared out among the groups."""
        return blocks // len(self.windows) * self.block_size

    def group_blocks(self, window: int | None, length: int, mnbt: int) -> int:
        """Blocks one request of ``length`` tokens needs in one group: all of it for full attention; the window
        plus the in-flight batches (one prefill chunk each, ``in_flight``), capped at the length, and a block of
        misalignment for a sliding window (``SlidingWindowSpec.max_memory_usage_bytes``)."""
        if window is None:
            return math.ceil(length / self.block_size)
        return math.ceil(min(window - 1 + self.batches * mnbt, length) / self.block_size) + 1

    def logged_tokens(self, blocks: int, length: int, mnbt: int, version: tuple[int, int, int]) -> int:
        """The "GPU KV cache size" V1 logs (see ``LOGGED_FROM_CONCURRENCY_SINCE``)."""
        if version < LOGGED_FROM_CONCURRENCY_SINCE or length <= 0:
            return self.tokens(blocks)
        return int(blocks / self.blocks_for(length, mnbt) * length)

    def blocks_for(self, length: int, mnbt: int) -> int:
        """Blocks one request of ``length`` tokens takes from the shared pool: the sum over the groups (what the
        "Maximum concurrency" line divides the blocks by, ``get_max_concurrency_for_kv_cache_config``)."""
        return sum(self.group_blocks(w, length, mnbt) for w in self.windows)

    def needed_bytes(self, length: int, mnbt: int, check: Check = "groups") -> int:
        """The bytes the version's max-length check compares with the KV budget (see ``check_rule``)."""
        if check == "first_group":
            return self.group_blocks(self.windows[self.first], length, mnbt) * self.block_bytes
        if check == "layers" and self.check_windows:
            return sum(n * self.group_blocks(w, length, mnbt) for w, n in self.check_windows) * self.page_bytes
        if check == "layers":
            counts = self.layers or (self.group_layers,) * len(self.windows)
            pages = sum(n * self.group_blocks(w, length, mnbt) for w, n in zip(self.windows, counts, strict=True))
            return pages * self.page_bytes
        return self.blocks_for(length, mnbt) * self.block_bytes

    def longest(self, kv_bytes: float, mnbt: int, cap: int, check: Check = "groups") -> int:
        """The longest request length up to ``cap`` whose need fits ``kv_bytes`` (vLLM's binary search)."""
        if self.needed_bytes(1, mnbt, check) > kv_bytes:
            return 0
        lo, hi = 1, cap
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.needed_bytes(mid, mnbt, check) <= kv_bytes:
                lo = mid
            else:
                hi = mid - 1
        return lo


def group_size(full: int, sliding: int, version: tuple[int, int, int]) -> int:
    """Layers per group for a hybrid of ``full`` and ``sliding`` layers (see ``GROUP_PAD_125_SINCE``)."""
    small, large = min(full, sliding), max(full, sliding)
    if version >= GROUP_PAD_15_SINCE:
        factor = 1.5
    elif version >= GROUP_PAD_125_SINCE:
        factor = 1.25
    else:
        return small
    return large if large < small * factor else small


def _split(count: int, groups: int) -> tuple[int, ...]:
    """Real layers in each of ``groups`` groups of one kind: vLLM deals them out ``layers[i::groups]``."""
    return tuple(len(range(i, count, groups)) for i in range(groups))


def build(model: ModelSpec, page: int, block_size: int, engine: str, version: tuple[int, int, int],
          batches: int = 1) -> KvLayout:
    """The groups vLLM forms: one for a uniform model; for a hybrid one ``group_size`` layers per group, each kind
    split into groups of that size. V0, and V1 before the hybrid manager, size sliding-window layers as full.
    ``batches``: what a sliding group holds per request (``in_flight.batches``)."""
    layers = model.num_layers
    window = model.sliding_window
    sliding = model.sliding_layers if window and engine == "V1" else 0
    if 0 < sliding < layers and version < HYBRID_KV_SINCE:
        checked = ((None, layers - sliding), (window, sliding)) if version >= SLIDING_SPEC_SINCE else ()
        return KvLayout(page, layers, (None,), block_size, check_windows=checked)
    if sliding == 0 or window is None:
        return KvLayout(page, layers, (None,), block_size)
    if sliding == layers:
        return KvLayout(page, layers, (window,), block_size, batches=batches)
    full = layers - sliding
    size = group_size(full, sliding, version)
    n_full, n_sliding = math.ceil(full / size), math.ceil(sliding / size)
    first = n_full if model.architecture.startswith(SLIDING_FIRST_ARCH_PREFIXES) else 0
    windows = (None,) * n_full + (window,) * n_sliding
    return KvLayout(page, size, windows, block_size, _split(full, n_full) + _split(sliding, n_sliding), first, batches)
