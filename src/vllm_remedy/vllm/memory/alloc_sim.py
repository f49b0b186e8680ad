"""A replay of PyTorch's CUDA caching allocator, for load sequences whose fragmentation the closed-form tails miss.

``alloc_tail`` charges each large tensor's unsplit rest on its own. That holds while every tensor takes a fresh segment;
a load that frees and re-allocates mid-size tensors (1-10 MiB, carved from shared 20 MiB segments) leaves free rests in
segments a live tensor still holds, which ``empty_cache`` cannot return and which vLLM's free-memory budget (0.27+)
counts. How much stays depends on the order of the requests, so it is replayed, not summed.

The rules are those of the native allocator (c10/cuda/CUDACachingAllocator.cpp, as stored at pytorch commit 001074d;
no expandable segments, which vLLM does not enable, one stream):

* sizes round up to 512 B (``round_size``); 1 MiB or less is the small pool (``get_pool``), anything larger the large;
* a new segment is 2 MiB for the small pool, 20 MiB for a request under 10 MiB, else the request rounded up to 2 MiB
  (``get_allocation_size``);
* a request takes the smallest cached block of its pool that fits (``get_free_block``: ``lower_bound`` on (size,
  address)), except that a request under ``max_split_size`` never takes a block of ``max_split_size`` or more and a
  request at or above it never takes a block of ``size + 20 MiB`` or more;
* the taken block is split if the rest is 512 B or more in the small pool, or, in the large pool, if the request is
  under ``max_split_size`` and the rest exceeds 1 MiB (``should_split``);
* a freed block merges with free neighbours of its segment (``free_block``, ``try_merge_blocks``), and ``empty_cache``
  returns only whole free segments (``release_cached_blocks``).
"""

from __future__ import annotations

import bisect
from collections.abc import Hashable

MIB = 1 << 20
K_MIN_BLOCK = 512
K_SMALL_SIZE = MIB
K_SMALL_BUFFER = 2 * MIB
K_LARGE_BUFFER = 20 * MIB
K_MIN_LARGE_ALLOC = 10 * MIB
K_ROUND_LARGE = 2 * MIB
NO_SPLIT_LIMIT = (1 << 64) - 1  # PyTorch's default max_split_size (SIZE_MAX)


# A free block's pool entry is one int, ``size << PTR_BITS | ptr``: sorted ints order as c10's (size, address) pairs
# and bisect far faster than tuples. Addresses are handed out without gaps (merges follow the segment's links, not
# addresses), so they stay below the bytes ever reserved.
PTR_BITS = 56
PTR_MASK = (1 << PTR_BITS) - 1


class _Block:
    __slots__ = ("allocated", "next", "prev", "ptr", "requested", "size", "small")

    def __init__(self, ptr: int, size: int, small: bool) -> None:
        self.ptr, self.size, self.small = ptr, size, small
        self.prev: _Block | None = None
        self.next: _Block | None = None
        self.allocated = False
        self.requested = 0


class CachingAllocator:
    """One device's caching allocator: ``malloc``/``free`` by key, ``empty_cache``, and the three byte counts."""

    def __init__(self, max_split_size: int = NO_SPLIT_LIMIT) -> None:
        self.max_split_size = max_split_size
        self._pools: dict[bool, list[int]] = {True: [], False: []}
        self._free: dict[int, _Block] = {}  # free blocks by address
        self._live: dict[Hashable, _Block] = {}
        self._next_ptr = 0
        self.reserved = 0

    @staticmethod
    def round_size(nbytes: int) -> int:
        return max(K_MIN_BLOCK, -(-nbytes // K_MIN_BLOCK) * K_MIN_BLOCK)

    @staticmethod
    def segment_size(size: int) -> int:
        if size <= K_SMALL_SIZE:
            return K_SMALL_BUFFER
        if size < K_MIN_LARGE_ALLOC:
            return K_LARGE_BUFFER
        return -(-size // K_ROUND_LARGE) * K_ROUND_LARGE

    def _fit(self, size: int, pool: list[int]) -> int:
        """The pool index of the block ``get_free_block`` takes for ``size``, or -1."""
        i = bisect.bisect_left(pool, size << PTR_BITS)
        if i == len(pool):
            return -1
        found = pool[i] >> PTR_BITS
        if size < self.max_split_size <= found or (size >= self.max_split_size and found >= size + K_LARGE_BUFFER):
            return -1
        return i

    def _segment(self, size: int, small: bool) -> _Block:
        seg = self.segment_size(size)
        block = _Block(self._next_ptr, seg, small)
        self._next_ptr += seg
        assert self._next_ptr <= PTR_MASK
        self.reserved += seg
        return block

    def malloc(self, key: Hashable, nbytes: int) -> None:
        """Allocate ``nbytes`` under ``key``; a zero-byte tensor takes no block (the allocator returns no pointer)."""
        if nbytes == 0:
            return
        size = self.round_size(nbytes)
        small = size <= K_SMALL_SIZE
        pool = self._pools[small]
        i = self._fit(size, pool)
        block = self._segment(size, small) if i < 0 else self._free.pop(pool.pop(i) & PTR_MASK)
        rest = block.size - size
        if (rest >= K_MIN_BLOCK) if small else (size < self.max_split_size and rest > K_SMALL_SIZE):
            tail = _Block(block.ptr + size, rest, small)
            tail.prev, tail.next = block, block.next
            if block.next is not None:
                block.next.prev = tail
            block.next = tail
            block.size = size
            bisect.insort(pool, rest << PTR_BITS | tail.ptr)
            self._free[tail.ptr] = tail
        block.allocated = True
        block.requested = nbytes
        self._live[key] = block

    def probe(self, nbytes: int) -> None:
        """``malloc`` then ``free`` of one temporary, nothing in between: the state is unchanged if a cached block
        fits (a split rest merges back into the same block), else the new segment stays cached whole."""
        if nbytes == 0:
            return
        size = self.round_size(nbytes)
        small = size <= K_SMALL_SIZE
        pool = self._pools[small]
        if self._fit(size, pool) < 0:
            block = self._segment(size, small)
            bisect.insort(pool, block.size << PTR_BITS | block.ptr)
            self._free[block.ptr] = block

    def free(self, key: Hashable) -> None:
        """Free ``key``'s block (nothing for a zero-byte tensor) and merge it with free neighbours."""
        block = self._live.pop(key, None)
        if block is None:
            return
        block.allocated = False
        pool = self._pools[block.small]
        other = block.prev
        if other is not None and not other.allocated:
            del pool[bisect.bisect_left(pool, other.size << PTR_BITS | other.ptr)]
            del self._free[other.ptr]
            block.ptr, block.prev = other.ptr, other.prev
            if block.prev is not None:
                block.prev.next = block
            block.size += other.size
        other = block.next
        if other is not None and not other.allocated:
            del pool[bisect.bisect_left(pool, other.size << PTR_BITS | other.ptr)]
            del self._free[other.ptr]
            block.next = other.next
            if block.next is not None:
                block.next.prev = block
            block.size += other.size
        bisect.insort(pool, block.size << PTR_BITS | block.ptr)
        self._free[block.ptr] = block

    def empty_cache(self) -> None:
        """Return every whole free segment; free rests of segments that hold a live block stay reserved."""
        for small, pool in self._pools.items():
            kept = []
            for entry in pool:
                block = self._free[entry & PTR_MASK]
                if block.prev is None and block.next is None:
                    self.reserved -= block.size
                    del self._free[block.ptr]
                else:
                    kept.append(entry)
            self._pools[small] = kept

    @property
    def allocated(self) -> int:
        """What ``torch.cuda.memory_allocated`` reports: live blocks, unsplit rests included."""
        return sum(b.size for b in self._live.values())

    @property
    def requested(self) -> int:
        """The live tensors' own bytes."""
        return sum(b.requested for b in self._live.values())
