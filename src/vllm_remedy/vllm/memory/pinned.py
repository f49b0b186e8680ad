"""A KV cache sized by a flag, not the memory budget: ``--kv-cache-memory-bytes``, ``--num-gpu-blocks-override``.

Read in vLLM's source:

* ``--kv-cache-memory-bytes`` first appears in engine/arg_utils.py@0.10.2 (absent from 0.10.1.1, where argparse
  refuses it as an unrecognized argument), read by ``human_readable_int`` from that release. When it is set (and
  non-zero: ``if kv_cache_memory_bytes := ...``) ``Worker.determine_available_memory`` (v1/worker/gpu_worker.py@0.10.2
  through 0.34.0) still runs ``profile_run`` (the activation peak still happens) but returns the bytes as the KV
  budget, logging "reserved X GiB memory for KV Cache as specified by kv_cache_memory_bytes config and skipped memory
  profiling": the utilization budget is not used for the cache. ``init_device``'s free-memory check against
  ``total x gpu_memory_utilization`` still runs (gpu_worker.py@0.11.0 ``init_device``; v1/worker/utils.py@0.34.0
  ``request_memory``). The one-request check (``check_enough_kv_cache_memory``) then compares with the bytes. Nothing
  compares the bytes with the card: a cache larger than what weights, activations and non-torch memory leave is
  allocated and dies in a CUDA OOM (``initialize_kv_cache``). 0.34 turns its extensible (after-warmup) cache off
  when either flag is set (config/vllm.py@0.34.0: "kv_cache_memory_bytes overrides" / "num_gpu_blocks_override
  overrides").
* ``--num-gpu-blocks-override`` (``type=int``, every modelled release) replaces the block count after the budget is
  profiled. V0 (engine/llm_engine.py@0.7.2 ``_initialize_kv_caches``) then runs ``raise_if_cache_size_invalid`` on the
  overridden count (worker/worker.py@0.7.2: "No available memory" for <= 0, block_size x blocks < max_model_len
  refused). V1 up to 0.20 checks one request (and auto-fits the length) against the profiled budget bytes and only then
  overrides the count (``get_kv_cache_configs``, v1/core/kv_cache_utils.py@0.11.0 and @0.20.0); from 0.21.0 the
  override times the bytes per block replaces the budget before the check and the auto-fit
  (kv_cache_utils.py@0.21.0: "the cache size that will actually be allocated is decoupled from the profiled
  available_memory"). Either way the cache allocated is override x page size, whatever the budget was.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Protocol

from vllm_remedy.errors import UserError
from vllm_remedy.vllm.catalog import GIB
from vllm_remedy.vllm.versions import VersionRules


class Pins(Protocol):
    """The two flags as ``settings.EngineSettings`` and ``resolved.Resolved`` hold them (a Protocol, because
    settings imports this module)."""

    @property
    def kv_cache_memory_bytes(self) -> int | None: ...
    @property
    def num_gpu_blocks_override(self) -> int | None: ...


class ResolvedPins(Pins, Protocol):
    """``resolved.Resolved``: the flags and the release's rules."""

    @property
    def rules(self) -> VersionRules: ...

#: The first release with --kv-cache-memory-bytes (engine/arg_utils.py@0.10.2; not in @0.10.1.1).
KV_BYTES_SINCE = (0, 10, 2)
#: From this release V1's one-request check and auto-fit use the overridden block count (kv_cache_utils.py@0.21.0).
OVERRIDE_CHECKED_SINCE = (0, 21, 0)


def pin_flags(flags: Mapping[str, str], r: VersionRules, read_int: Callable[[str], int]) -> dict[str, float]:
    """The two flags as ``EngineSettings`` fields, each integer read as the release parses it (``read_int``). Before
    0.10.2 argparse has no --kv-cache-memory-bytes and stops ``vllm serve`` ("unrecognized arguments"): refused here."""
    out: dict[str, float] = {}
    if "kv-cache-memory-bytes" in flags:
        if r.version < KV_BYTES_SINCE:
            raise UserError(f"kv-cache-memory-bytes: vLLM {r.label} has no such flag (added in "
                            f"{'.'.join(map(str, KV_BYTES_SINCE))}); it refuses the argument at parsing")
        out["kv_cache_memory_bytes"] = read_int("kv-cache-memory-bytes")
    if "num-gpu-blocks-override" in flags:
        out["num_gpu_blocks_override"] = read_int("num-gpu-blocks-override")
    if (out.get("kv_cache_memory_bytes") or "num_gpu_blocks_override" in out) and r.kv_sized_after_warmup \
            and "gpu-memory-utilization" not in flags:
        out["gpu_memory_utilization"] = NO_EXTENSIBLE_DEFAULT_UTIL
    return out


#: 0.34's default utilization without the extensible cache (``CacheConfig.resolved_gpu_memory_utilization``,
#: config/cache.py@0.34.0: 1.0 with it, ``DEFAULT_GPU_MEMORY_UTILIZATION`` 0.92 otherwise).
NO_EXTENSIBLE_DEFAULT_UTIL = 0.92


def rules_without_extensible_cache(r: VersionRules, s: Pins) -> VersionRules:
    """0.34's rules with either flag set: the extensible cache is off (config/vllm.py@0.34.0), so the KV cache is sized
    before warmup and ``request_memory``'s free-memory check runs again (v1/worker/utils.py@0.34.0)."""
    if r.kv_sized_after_warmup and (s.kv_cache_memory_bytes or s.num_gpu_blocks_override is not None):
        return replace(r, kv_sized_after_warmup=False, free_memory_check=True)
    return r


def pinned(res: Pins) -> bool:
    """Whether a flag, not the memory budget, sizes the KV cache."""
    return bool(res.kv_cache_memory_bytes) or res.num_gpu_blocks_override is not None


def checked_budget(res: ResolvedPins, block_bytes: int, kv: float, blocks: int) -> tuple[float, int]:
    """(KV GiB vLLM's checks and auto-fit compare with, blocks) once the flags apply, before the length checks."""
    if res.kv_cache_memory_bytes:  # the bytes replace the profiled budget
        kv, blocks = res.kv_cache_memory_bytes / GIB, max(0, res.kv_cache_memory_bytes // block_bytes)
    override = res.num_gpu_blocks_override
    if override is not None and (res.rules.engine == "V0" or res.rules.version >= OVERRIDE_CHECKED_SINCE):
        kv, blocks = override * block_bytes / GIB, override
    return kv, blocks


def allocated_blocks(res: Pins, blocks: int) -> int:
    """The blocks vLLM allocates: V1 before 0.21 overrides the count only after its checks ran on the budget."""
    override = res.num_gpu_blocks_override
    return override if override is not None else blocks


def start_peak(other: float, context: float, weights: float, non_torch: float, activation: float, graphs: float,
               blocks: int, block_bytes: int) -> float:
    """The card's peak when the cache is the flag's size: nothing caps it at the utilization budget, so every term
    is counted as the process holds it (the profile's activation peak, the cache allocated after it, the graphs
    captured last)."""
    return other + context + weights + non_torch + activation + max(blocks, 0) * block_bytes / GIB + graphs


def pinned_notes(s: Pins) -> list[str]:
    """What the planner says when a flag fixes the cache's size: no utilization change moves it, and only the flag
    (which no step edits) would let the budget size it again."""
    out = []
    if s.kv_cache_memory_bytes:
        out.append(f"the KV cache is pinned at {s.kv_cache_memory_bytes:,} bytes per GPU by --kv-cache-memory-bytes "
                   f"(vLLM skips the --gpu-memory-utilization budget for it): utilization changes do not move it; "
                   f"change or remove that flag to size the cache differently")
    if s.num_gpu_blocks_override is not None:
        out.append(f"the KV cache is pinned at {s.num_gpu_blocks_override:,} blocks by --num-gpu-blocks-override "
                   f"(whatever the memory): no memory change moves it; change or remove that flag to size it")
    return out


#: The flags and their ``EngineSettings`` fields.
PIN_FIELDS = (("kv-cache-memory-bytes", "kv_cache_memory_bytes"),
              ("num-gpu-blocks-override", "num_gpu_blocks_override"))
#: Fields that lift the pin (back to the utilization budget), for ``dataclasses.replace``.
UNPINNED = {name: None for _, name in PIN_FIELDS}
UNPIN_NOTE = ("the flag-sized KV cache is planned without its flag, back to the --gpu-memory-utilization budget: vLLM "
              "then sizes the cache to what its profile measures the card leaves (other processes, weights and "
              "activations as they are at each start), and the budget's levers move it; a smaller pinned size would "
              "be this tool's guess at that figure, inside the estimator's error, with every other lever still dead")


def lifted(cur: Pins, new: Pins) -> tuple[str, ...]:
    """The flags ``cur`` sets and ``new`` does not: a step unsets them."""
    return tuple(flag for flag, name in PIN_FIELDS if getattr(cur, name) is not None and getattr(new, name) is None)
