"""What a rehearsal vLLM process holds on its GPU outside the KV cache at each step of its start, from the rehearsal's
own reading of the worker's init order (the figures are the memory model's terms, the order is read here).

- CUDA context: from ``init_device`` on. NCCL (TP >= 2): from ``init_worker_distributed_environment`` on, and only
  where the ranks' GPUs have CUDA P2P (or it is not known): without it vLLM builds no custom all-reduce and NCCL's SHM
  transport keeps its buffers in host memory (src/transport/shm.cc@v2.26.2-1).
- The memory snapshot (the free-memory check, the "free at start" figure and the relative budget's baseline): V1 takes
  it after the distributed init from 0.11.0 (v1/worker/gpu_worker.py@0.11.0 ``init_device``: "Initialize the
  distributed environment BEFORE taking memory snapshot"), before it up to 0.10.2 (gpu_worker.py@0.10.2:
  ``MemorySnapshot()`` and the free-memory check, then ``init_worker_distributed_environment``), as V0 does
  (worker/worker.py@0.10.0: ``baseline_snapshot`` before it). NCCL's memory is then in the profile's growth.
- Graph capture comes after the KV cache is allocated, once ``memory_profiling`` has run ``gc.collect()`` and
  ``empty_cache()`` (utils/__init__.py@0.10.2, utils/mem_utils.py@0.27.1): the profile's activation is free again,
  and what the capture step holds besides the graphs is the memory model's ``post_capture`` term.
"""

from __future__ import annotations

from vllm_remedy.sim.vllm_pod.launch import Launch
from vllm_remedy.vllm.memory import post_capture
from vllm_remedy.vllm.memory.core import graphs_in_budget
from vllm_remedy.vllm.memory.non_torch import NCCL_INIT_GIB, context_gib
from vllm_remedy.vllm.versions import parse_version

#: V1 takes its snapshot after ``init_worker_distributed_environment`` from this release (gpu_worker.py@0.11.0).
SNAPSHOT_AFTER_DISTRIBUTED_SINCE = (0, 11, 0)


def nccl_gib(launch: Launch) -> float:
    """NCCL's device memory per rank once the distributed environment is up (0 at TP 1 and without P2P)."""
    res = launch.resolved
    return NCCL_INIT_GIB if res.tp >= 2 and res.p2p is not False else 0.0


def held_running(launch: Launch) -> float:
    """The process's own memory from the distributed init on (weights loading, profile, serving): context and NCCL."""
    return context_gib(launch.gpu, 1) + nccl_gib(launch)


def held_at_snapshot(launch: Launch) -> float:
    """The process's own memory when vLLM snapshots the device: the context, and NCCL where the snapshot comes after
    the distributed init (V1 from 0.11.0)."""
    release = parse_version(launch.version) or (0, 0, 0)
    after = launch.resolved.rules.engine == "V1" and release >= SNAPSHOT_AFTER_DISTRIBUTED_SINCE
    return context_gib(launch.gpu, 1) + (nccl_gib(launch) if after else 0.0)


def capture_excess(launch: Launch) -> float:
    """What the capture step adds above the KV budget: graphs outside it plus the step's own allocations, less the
    profile's activation freed before the cache (0 when nothing is captured outside the budget)."""
    est, res = launch.estimate, launch.resolved
    outside = 0.0 if graphs_in_budget(res) or res.enforce_eager else est.cudagraph_gib
    if outside <= 0:
        return 0.0
    live = post_capture.transient_gib(launch.model, res, launch.gpu.capability, est.activation_gib)
    return max(0.0, outside - est.activation_gib + live)


def fits_peak(launch: Launch) -> float:
    """The card's peak for a start whose checks pass: the requested budget; for budgets relative to the snapshot,
    other processes and what the process held at the snapshot (an "absolute" budget already counts them, and NCCL);
    then the capture step's excess."""
    res = launch.resolved
    relative = 0.0 if res.rules.budget == "absolute" else res.other_process_gib + held_at_snapshot(launch)
    return launch.estimate.total_gib * res.util + relative + capture_excess(launch)
