"""``alloc_sim``'s caching allocator replayed pool by pool from compiled request templates: the same blocks, splits,
merges and byte counts as ``CachingAllocator`` for the same requests, several times faster.

Why: a replay of an AWQ load runs ~20,000 requests (80 layers), ~14 ms by key through ``CachingAllocator``, against
the 5 ms an estimate may take. A model's layers repeat one request sequence, so it is recorded once per layer kind
(``Recorder``), split by pool and compiled to slot numbers (``Trace``); a temporary freed before its pool sees any
other request becomes a ``probe``. Pools are replayed apart, which changes nothing (``BlockPool``'s docstring).
"""

from __future__ import annotations

import bisect
from collections.abc import Hashable, Iterable

from vllm_remedy.vllm.memory.alloc_sim import (
    K_LARGE_BUFFER,
    K_MIN_BLOCK,
    K_SMALL_SIZE,
    PTR_BITS,
    PTR_MASK,
    CachingAllocator,
    _Block,
)

# Opcodes of a compiled request: (code, slot offset, slot stride per layer, bytes asked, rounded size).
MALLOC, FREE, PROBE, HUGE_MALLOC, HUGE_FREE, HUGE_PROBE = range(6)
Op = tuple[int, int, int, int, int]


class BlockPool:
    """One pool of ``CachingAllocator`` on its own, by block instead of by key: the small pool (2 MiB segments), or
    the large pool's requests under ``max_split_size`` ("mid"), with ``HugeCache`` holding the rest.

    Why the pools may be replayed apart: a request only ever takes a block of its own pool, merges follow the
    segment's links, and addresses are only compared between blocks of one pool (which keep their creation order
    with a counter per pool). In the large pool a request under ``max_split_size`` never takes a block of
    ``max_split_size`` or more, and a request at or above it is never split, so its segment holds that one block;
    a block of ``max_split_size`` or more under a smaller request only arises as a whole free mid segment (20 MiB),
    which from then on serves only the larger requests exactly as one of theirs would: ``free`` and ``probe`` hand
    it to the ``HugeCache``.
    """

    __slots__ = ("_free", "_next_ptr", "_pool", "huge", "reserved", "small")

    def __init__(self, small: bool, huge: HugeCache | None = None) -> None:
        self.small, self.huge = small, huge
        self._pool: list[int] = []
        self._free: dict[int, _Block] = {}
        self._next_ptr = 0
        self.reserved = 0

    def malloc(self, size: int) -> _Block:
        """The block a request of ``size`` (already rounded) takes, split as c10 splits it."""
        pool = self._pool
        i = bisect.bisect_left(pool, size << PTR_BITS)
        if i < len(pool):
            block = self._free.pop(pool.pop(i) & PTR_MASK)
        else:
            seg = CachingAllocator.segment_size(size)
            block = _Block(self._next_ptr, seg, self.small)
            self._next_ptr += seg
            self.reserved += seg
        rest = block.size - size
        if (rest >= K_MIN_BLOCK) if self.small else rest > K_SMALL_SIZE:
            tail = _Block(block.ptr + size, rest, self.small)
            tail.prev, tail.next = block, block.next
            if block.next is not None:
                block.next.prev = tail
            block.next = tail
            block.size = size
            bisect.insort(pool, rest << PTR_BITS | tail.ptr)
            self._free[tail.ptr] = tail
        block.allocated = True
        return block

    def probe(self, size: int) -> None:
        """``CachingAllocator.probe`` in this pool."""
        pool = self._pool
        if bisect.bisect_left(pool, size << PTR_BITS) == len(pool):
            seg = CachingAllocator.segment_size(size)
            if self.huge is not None and seg >= self.huge.max_split_size:
                self.huge.reserved += seg
                self.huge.cache(seg)
            else:
                self.reserved += seg
                bisect.insort(pool, seg << PTR_BITS | self._next_ptr)
                self._free[self._next_ptr] = _Block(self._next_ptr, seg, self.small)
            self._next_ptr += seg

    def free(self, block: _Block) -> None:
        """``CachingAllocator.free`` of ``block``."""
        block.allocated = False
        pool = self._pool
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
        if self.huge is not None and block.size >= self.huge.max_split_size:  # only a whole segment is that large
            self.reserved -= block.size
            self.huge.reserved += block.size
            self.huge.cache(block.size)
            return
        bisect.insort(pool, block.size << PTR_BITS | block.ptr)
        self._free[block.ptr] = block

    def empty_cache(self) -> None:
        """Return every whole free segment."""
        kept = []
        for entry in self._pool:
            block = self._free[entry & PTR_MASK]
            if block.prev is None and block.next is None:
                self.reserved -= block.size
                del self._free[block.ptr]
            else:
                kept.append(entry)
        self._pool = kept


class HugeCache:
    """The large pool's requests of ``max_split_size`` or more: each block is a whole segment, never split nor merged,
    so the cached blocks are a sorted list of sizes (which of two equal ones is taken changes nothing)."""

    __slots__ = ("_sizes", "max_split_size", "reserved")

    def __init__(self, max_split_size: int) -> None:
        self.max_split_size = max_split_size
        self._sizes: list[int] = []
        self.reserved = 0

    def cache(self, size: int) -> None:
        bisect.insort(self._sizes, size)

    def malloc(self, size: int) -> int:
        """The block size a request of ``size`` (rounded, at least ``max_split_size``) takes."""
        sizes = self._sizes
        i = bisect.bisect_left(sizes, size)
        if i < len(sizes) and sizes[i] < size + K_LARGE_BUFFER:
            return sizes.pop(i)
        seg = CachingAllocator.segment_size(size)
        self.reserved += seg
        return seg

    def probe(self, size: int) -> None:
        self.cache(self.malloc(size))

    def empty_cache(self) -> None:
        self.reserved -= sum(self._sizes)
        self._sizes = []


class Recorder:
    """Takes the requests a load driver makes (``malloc``/``free`` by key, numbered temporaries) as a list of
    (is malloc, key, bytes), for ``Trace.compile``."""

    def __init__(self) -> None:
        self.ops: list[tuple[bool, Hashable, int]] = []
        self._count = 0

    def malloc(self, key: Hashable, nbytes: int) -> None:
        self.ops.append((True, key, nbytes))

    def free(self, key: Hashable) -> None:
        self.ops.append((False, key, 0))

    def scratch(self, nbytes: int) -> int:
        """A temporary (an ATen output freed once its expression or frame ends), numbered per recording."""
        self._count += 1
        self.malloc(("tmp", self._count), nbytes)
        return self._count

    def drop(self, *keys: int) -> None:
        for key in keys:
            self.free(("tmp", key))

    def take(self) -> list[tuple[bool, Hashable, int]]:
        """The requests recorded since the last ``take``."""
        ops, self.ops = self.ops, []
        return ops


class Trace:
    """Recorded request templates compiled per pool, and replayed.

    A key whose first item is an int is a layer's (the recording's layer is ``base``): replayed for layer L it
    takes slot ``j + L * per_layer``; any other key takes one fixed slot (negative, so both share one list), so a
    temporary must be freed within the template that makes it.
    """

    def __init__(self, max_split_size: int) -> None:
        self.huge = HugeCache(max_split_size)
        self.small = BlockPool(True)
        self.mid = BlockPool(False, self.huge)
        self.requested = self.allocated = 0
        self._layered: dict[Hashable, int] = {}
        self._fixed: dict[Hashable, int] = {}
        self._nbytes: dict[Hashable, int] = {}
        self._live: list[_Block | int | None] = []

    def _key(self, key: Hashable, base: int) -> tuple[Hashable, bool]:
        if isinstance(key, tuple) and key and type(key[0]) is int:
            return (key[0] - base, *key[1:]), True
        return key, False

    def declare(self, ops: list[tuple[bool, Hashable, int]], base: int = 0) -> None:
        """Name the slots a template uses (every template before any ``compile``)."""
        for is_malloc, key, nbytes in ops:
            name, layered = self._key(key, base)
            table = self._layered if layered else self._fixed
            table.setdefault(name, len(table))
            if is_malloc:
                self._nbytes[name] = nbytes

    def compile(self, ops: list[tuple[bool, Hashable, int]], base: int = 0) -> tuple[list[Op], list[Op]]:
        """(small pool's, large pool's) requests of a declared template; zero-byte tensors take no block."""
        per_layer = len(self._layered)
        small: list[Op] = []
        large: list[Op] = []
        for is_malloc, key, _ in ops:
            name, layered = self._key(key, base)
            nbytes = self._nbytes[name]
            if nbytes == 0:
                continue
            slot, stride = (self._layered[name], per_layer) if layered else (-1 - self._fixed[name], 0)
            size = CachingAllocator.round_size(nbytes)
            out = small if size <= K_SMALL_SIZE else large
            huge = 3 if size >= self.huge.max_split_size else 0
            if is_malloc:
                out.append((MALLOC + huge, slot, stride, nbytes, size))
            elif out and out[-1][:3] == (MALLOC + huge, slot, stride):
                out[-1] = (PROBE + huge, slot, stride, nbytes, size)  # malloc then free, nothing in its pool between
            else:
                out.append((FREE + huge, slot, stride, nbytes, size))
        return small, large

    def size_for(self, layers: int) -> None:
        """Slots for ``layers`` layers; call after the last ``declare``."""
        self._live = [None] * (layers * len(self._layered) + len(self._fixed))

    def run(self, ops: list[Op], layers: Iterable[int]) -> None:
        """Replay ``ops`` once per layer of ``layers`` (in order)."""
        live, small, mid, huge = self._live, self.small, self.mid, self.huge
        requested, allocated = self.requested, self.allocated
        for layer in layers:
            for code, slot, stride, nbytes, size in ops:
                if code == MALLOC:
                    block = (small if size <= K_SMALL_SIZE else mid).malloc(size)
                    live[slot + layer * stride] = block
                    requested += nbytes
                    allocated += block.size
                elif code == FREE:
                    block = live[slot + layer * stride]
                    requested -= nbytes
                    allocated -= block.size
                    (small if size <= K_SMALL_SIZE else mid).free(block)
                elif code == PROBE:
                    (small if size <= K_SMALL_SIZE else mid).probe(size)
                elif code == HUGE_MALLOC:
                    got = live[slot + layer * stride] = huge.malloc(size)
                    requested += nbytes
                    allocated += got
                elif code == HUGE_FREE:
                    got = live[slot + layer * stride]
                    requested -= nbytes
                    allocated -= got
                    huge.cache(got)
                else:
                    huge.probe(size)
        self.requested, self.allocated = requested, allocated

    def probe_until_settled(self, ops: list[Op], passes: int) -> None:
        """Replay a template of probes until a pass adds no segment (a pass that adds none leaves the pool as it found
        it, so later passes would change nothing), at most ``passes`` times."""
        for _ in range(passes):
            before = self.reserved
            self.run(ops, (0,))
            if self.reserved == before:
                break

    @property
    def reserved(self) -> int:
        return self.small.reserved + self.mid.reserved + self.huge.reserved

    def empty_cache(self) -> None:
        self.small.empty_cache()
        self.mid.empty_cache()
        self.huge.empty_cache()
