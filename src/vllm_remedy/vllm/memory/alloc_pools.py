"""``alloc_sim``'s caching allocator replayed pool by pool from compiled request templates: the same blocks, splits,
merges and byte counts as ``CachingAllocator`` for the same requests, in about half the time.

Why: a replay of an AWQ load runs ~20,000 requests (80 layers), ~14 ms by key through ``CachingAllocator``, against
the 5 ms an estimate may take (pool by pool: ~7 ms). A model's layers repeat one request sequence, so it is recorded
once per layer kind (``Recorder``), split by pool and compiled to slot numbers (``Trace``); a temporary freed before
its pool sees any other request becomes a ``probe``. Pools are replayed apart, which changes nothing (``BlockPool``).
"""

from __future__ import annotations

import bisect
from collections.abc import Hashable, Iterable, Sequence

from vllm_remedy.vllm.memory.alloc_sim import (
    K_LARGE_BUFFER,
    K_MIN_BLOCK,
    K_SMALL_SIZE,
    NO_SPLIT_LIMIT,
    PTR_BITS,
    PTR_MASK,
    CachingAllocator,
)

# Opcodes of a compiled request: (code, slot offset, slot stride per layer, bytes asked, rounded size).
MALLOC, FREE, PROBE, HUGE_MALLOC, HUGE_FREE, HUGE_PROBE = range(6)
Op = tuple[int, int, int, int, int]
# A block: [address, size, previous block of its segment, next block, live]; None at a segment's ends.
PTR, SIZE, PREV, NEXT, LIVE = range(5)


class BlockPool:
    """One pool of ``CachingAllocator`` on its own: the small pool (2 MiB segments), or the large pool's requests
    under ``max_split_size`` ("mid") with ``HugeCache`` holding the others. Blocks are lists (``PTR`` ... ``LIVE``):
    cheaper to make and read than objects, which matters at ~10,000 requests a replay.

    Why the pools may be replayed apart: a request only ever takes a block of its own pool, merges follow the
    segment's links, and addresses are only compared between blocks of one pool (which keep their creation order
    with a counter per pool). In the large pool a request under ``max_split_size`` never takes a block of
    ``max_split_size`` or more, and a request at or above it is never split, so its segment holds that one block;
    a block of ``max_split_size`` or more under a smaller request only arises as a whole free mid segment (20 MiB),
    which from then on serves only the larger requests exactly as one of theirs would: it is handed to the
    ``HugeCache`` when freed or probed.
    """

    __slots__ = ("_free", "_next_ptr", "_pool", "huge", "reserved", "small")

    def __init__(self, small: bool, huge: HugeCache | None = None) -> None:
        self.small, self.huge = small, huge
        self._pool: list[int] = []  # free blocks as ``size << PTR_BITS | ptr``, sorted as c10's (size, address)
        self._free: dict[int, list] = {}  # free blocks by address
        self._next_ptr = 0
        self.reserved = 0

    def run(self, ops: list[Op], layers: Iterable[int], live: list) -> int:
        """Replay this pool's ``ops`` (and the ``HugeCache``'s, for the mid pool) once per layer; the change in
        allocated bytes. ``CachingAllocator.malloc``/``free``/``probe``, inlined."""
        pool, free_at, small, huge = self._pool, self._free, self.small, self.huge
        bisect_left, insort = bisect.bisect_left, bisect.insort
        max_split = huge.max_split_size if huge is not None else NO_SPLIT_LIMIT
        sizes = huge._sizes if huge is not None else []
        allocated = 0
        for layer in layers:
            for code, slot, stride, _, size in ops:
                if code == MALLOC:
                    i = bisect_left(pool, size << PTR_BITS)
                    if i < len(pool):
                        block = free_at.pop(pool.pop(i) & PTR_MASK)
                    else:
                        seg = CachingAllocator.segment_size(size)
                        block = [self._next_ptr, seg, None, None, False]
                        self._next_ptr += seg
                        self.reserved += seg
                    rest = block[SIZE] - size
                    if (rest >= K_MIN_BLOCK) if small else rest > K_SMALL_SIZE:
                        after = block[NEXT]
                        tail = [block[PTR] + size, rest, block, after, False]
                        if after is not None:
                            after[PREV] = tail
                        block[NEXT] = tail
                        block[SIZE] = size
                        insort(pool, rest << PTR_BITS | tail[PTR])
                        free_at[tail[PTR]] = tail
                    block[LIVE] = True
                    live[slot + layer * stride] = block
                    allocated += block[SIZE]
                elif code == FREE:
                    block = live[slot + layer * stride]
                    allocated -= block[SIZE]
                    block[LIVE] = False
                    other = block[PREV]
                    if other is not None and not other[LIVE]:
                        del pool[bisect_left(pool, other[SIZE] << PTR_BITS | other[PTR])]
                        del free_at[other[PTR]]
                        block[PTR] = other[PTR]
                        block[SIZE] += other[SIZE]
                        block[PREV] = other = other[PREV]
                        if other is not None:
                            other[NEXT] = block
                    other = block[NEXT]
                    if other is not None and not other[LIVE]:
                        del pool[bisect_left(pool, other[SIZE] << PTR_BITS | other[PTR])]
                        del free_at[other[PTR]]
                        block[SIZE] += other[SIZE]
                        block[NEXT] = other = other[NEXT]
                        if other is not None:
                            other[PREV] = block
                    if block[SIZE] >= max_split:  # only a whole mid segment is that large
                        self.reserved -= block[SIZE]
                        huge.reserved += block[SIZE]
                        insort(sizes, block[SIZE])
                    else:
                        insort(pool, block[SIZE] << PTR_BITS | block[PTR])
                        free_at[block[PTR]] = block
                elif code == PROBE:
                    if bisect_left(pool, size << PTR_BITS) == len(pool):
                        seg = CachingAllocator.segment_size(size)
                        if seg >= max_split:
                            huge.reserved += seg
                            insort(sizes, seg)
                        else:
                            self.reserved += seg
                            insort(pool, seg << PTR_BITS | self._next_ptr)
                            free_at[self._next_ptr] = [self._next_ptr, seg, None, None, False]
                        self._next_ptr += seg
                elif code == HUGE_MALLOC:
                    got = live[slot + layer * stride] = huge.malloc(size)
                    allocated += got
                elif code == HUGE_FREE:
                    got = live[slot + layer * stride]
                    allocated -= got
                    insort(sizes, got)
                else:
                    insort(sizes, huge.malloc(size))
        return allocated

    def empty_cache(self) -> None:
        """Return every whole free segment."""
        kept = []
        for entry in self._pool:
            block = self._free[entry & PTR_MASK]
            if block[PREV] is None and block[NEXT] is None:
                self.reserved -= block[SIZE]
                del self._free[block[PTR]]
            else:
                kept.append(entry)
        self._pool[:] = kept


class HugeCache:
    """The large pool's requests of ``max_split_size`` or more: each block is a whole segment, never split nor merged,
    so the cached blocks are a sorted list of sizes (which of two equal ones is taken changes nothing)."""

    __slots__ = ("_sizes", "max_split_size", "reserved")

    def __init__(self, max_split_size: int) -> None:
        self.max_split_size = max_split_size
        self._sizes: list[int] = []
        self.reserved = 0

    def malloc(self, size: int) -> int:
        """The block size a request of ``size`` (rounded, at least ``max_split_size``) takes: the smallest cached one
        under ``size`` + 20 MiB (``get_free_block``), else a new segment."""
        sizes = self._sizes
        i = bisect.bisect_left(sizes, size)
        if i < len(sizes) and sizes[i] < size + K_LARGE_BUFFER:
            return sizes.pop(i)
        seg = CachingAllocator.segment_size(size)
        self.reserved += seg
        return seg

    def empty_cache(self) -> None:
        self.reserved -= sum(self._sizes)
        self._sizes.clear()


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
        self._live: list[list | int | None] = []

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
        """(small pool's, large pool's) requests of a declared template; zero-byte tensors take no block, and a key
        never allocated is freed as nothing (as ``CachingAllocator.free`` does)."""
        per_layer = len(self._layered)
        small: list[Op] = []
        large: list[Op] = []
        for is_malloc, key, _ in ops:
            name, layered = self._key(key, base)
            nbytes = self._nbytes.get(name, 0)
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

    def run(self, ops: list[Op], layers: Sequence[int]) -> None:
        """Replay one pool's ``ops`` (as ``compile`` split them) once per layer of ``layers``, in order."""
        if ops:
            pool = self.small if ops[0][4] <= K_SMALL_SIZE else self.mid
            self.allocated += pool.run(ops, layers, self._live)
            self.requested += len(layers) * sum(nbytes if code in (MALLOC, HUGE_MALLOC) else -nbytes
                                                for code, _, _, nbytes, _ in ops if code not in (PROBE, HUGE_PROBE))

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
