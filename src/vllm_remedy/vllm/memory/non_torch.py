"""Memory outside PyTorch's allocator that vLLM charges to its startup budget: the profile's non-torch growth and,
for "absolute" budgets, the CUDA context and NCCL.

A term of its own because it depends on the GPU and the process layout (capability, TP, CUDA P2P), not on the model's
shapes; split out of ``terms`` when that module passed its size limit. Fitted constants, like ``terms``'s, name the
evidence they were fitted on.
"""

from __future__ import annotations

from vllm_remedy.vllm.catalog import GpuSpec
from vllm_remedy.vllm.memory.resolved import Resolved
from vllm_remedy.vllm.memory.v0_comm import v0_p2p_comm_gib
from vllm_remedy.vllm.versions import VersionRules

# V1 non-torch growth during profiling at TP 1: 0.24-0.27 GiB printed by the 0.19.0 H100 logs ("GiB for non-torch
# memory"), but 0.13 by llm-d-planner's Qwen3-14B records at 0.15.0 and 0.16.0 (fitted here; 0.17.0 prints 0.13 too,
# 0.18.0 0.25, same source). What grew at 0.18 is not identified in the source; the early figure is carried back to
# every V1 release before 0.18 (an assumption, not a fit on older logs).
V1_NON_TORCH_TP1_GIB = 0.27
V1_NON_TORCH_TP1_EARLY_GIB = 0.13
V1_NON_TORCH_TP1_GROWTH_SINCE = (0, 18, 0)
# V1 at TP >= 2 on Hopper: 2.06-2.21 GiB per rank (llm-d 0.19.0 H100 logs, fitted as 2.12 at TP 2 and 2.22 above). It
# was applied from 0.11 on no evidence; DaisukeTakai's two 8 x H100 starts on 0.10.0 leave 7.96 GiB per rank for
# activation and non-torch memory, which holds the sampler's sort (5.7) only with it (fitted on those two).
V1_NON_TORCH_HOPPER_TP2_SINCE = (0, 10, 0)
# V1 at TP >= 2 below Hopper (or before 0.10) when the GPUs have CUDA P2P, or it is not known: per rank, never fitted
# on a case (the 2 x A100 0.11.2 logs, P2P on, imply ~0.5). What it stands for is NCCL's P2P-transport buffers
# in device memory (see ``non_torch_gib``). Without P2P the TP-1 figure applies instead.
V1_NON_TORCH_TP2_GIB = 0.6
# V0 non-torch growth during profiling at TP >= 2, per rank: 0.25 GiB logged on vllm#13061's rank 1; rank 0's
# 7.46 GiB of KV (81,536 tokens) less the sort-inclusive activation leaves 0.36 -> 0.4 (fitted on that case).
# It was 1.6 while the sampler term had no sort: the constant had absorbed rank 0's 1.2 GiB sort.
# That pair has no CUDA P2P; with P2P, v0_comm adds NCCL's and custom all-reduce's buffers (from source, not fitted).
# 0.5.5-0.6.3 take the same baseline (free memory before the distributed setup, worker/worker.py@0.5.5) and get the
# same figure, carried down unfitted (``versions.V0_ABSOLUTE_BUDGET``).
V0_NON_TORCH_TP2_GIB = 0.4

# CUDA context (+ cuBLAS workspace) per process on a card the catalog has no measurement for (``GpuSpec.context_gib``,
# read from logs' startup lines): 0.51 GiB on H100 (llm-d logs), 0.35 GiB on RTX 3090 (vllm#10517). NCCL + custom
# all-reduce add ~1.0 GiB per rank at TP >= 2 before vLLM's snapshot.
CONTEXT_BIG_GPU_GIB = 0.51
CONTEXT_SMALL_GPU_GIB = 0.37
NCCL_INIT_GIB = 1.03


# V1 takes its memory snapshot (the free-memory check's and the budget's baseline) after the distributed init from
# 0.11.0 (v1/worker/gpu_worker.py@0.11.0 ``init_device``: ``init_worker_distributed_environment`` then
# ``MemorySnapshot``); before, the snapshot comes first (@0.8.5 ``init_gpu_memory``, @0.9.2, @0.10.0, @0.10.2), and so
# does V0's baseline (worker/worker.py@0.8.5, @0.9.2, @0.10.0), so NCCL's memory is part of the profile's non-torch
# growth (``non_torch_gib``), inside the budget.
NCCL_BEFORE_SNAPSHOT_SINCE = (0, 11, 0)


def context_gib(gpu: GpuSpec, tp: int, *, nccl: bool = True) -> float:
    """Memory the process holds before loading weights (CUDA context, NCCL at TP >= 2 unless ``nccl`` is False): the
    card's measured context where the catalog has one, else the size class's figure."""
    base = gpu.context_gib if gpu.context_gib is not None else (
        CONTEXT_BIG_GPU_GIB if gpu.total_gib >= 70 else CONTEXT_SMALL_GPU_GIB)
    return base + (NCCL_INIT_GIB if tp >= 2 and nccl else 0.0)


def nccl_outside_budget(res: Resolved) -> bool:
    """Whether NCCL's init memory (``NCCL_INIT_GIB``) sits outside the KV budget, in the used memory vLLM's snapshot
    sees: for "absolute" budgets (which count it, ``non_torch_gib``) and V1 from 0.11.0
    (``NCCL_BEFORE_SNAPSHOT_SINCE``); for "increase" budgets before, the profile's non-torch growth holds it. Never
    without CUDA P2P (``res.p2p`` False): vLLM then builds no custom all-reduce and NCCL's SHM transport keeps its
    buffers in host memory (src/transport/shm.cc@v2.26.2-1, as ``non_torch_gib`` reads it). Written after the
    capture-OOM verdicts on TP >= 2 calibration starts whose logs show the capture finished (post hoc); 1.03 GiB is
    still the H100 NVLink figure wherever it is charged."""
    if res.tp < 2 or res.p2p is False:
        return False
    return res.rules.budget == "absolute" or res.rules.version >= NCCL_BEFORE_SNAPSHOT_SINCE


def non_torch_gib(gpu: GpuSpec, res: Resolved) -> float:
    """Memory outside PyTorch's allocator that vLLM charges to the budget.

    "increase" budgets count only what grows during profiling: 0.24-0.27 GiB at TP=1 (0.19.0), but
    2.06-2.21 GiB per rank at TP >= 2 from 0.10 on Hopper (llm-d 0.19.0 H100 logs, two 0.10.0 logs), 0.6 before
    and below capability 9.0 (2 x A100 0.11.2 logs imply ~0.5), 0.4 GiB on V0 0.7 (vllm#13061, fitted; + ``v0_comm``).
    "absolute" budgets also count the CUDA context and NCCL, which are already in the device's used memory, and on
    V1 at TP 1 the growth beside a context measured at startup (``_v1_absolute_tp1_growth``).

    Below Hopper the TP >= 2 growth is what the distributed groups, set up after the baseline snapshot
    (v1/worker/gpu_worker.py@v0.10.1.1), put in device memory: custom all-reduce's two IPC buffers (~16 MiB,
    custom_all_reduce.py) and mostly NCCL's transport buffers (LL 0.5 + LL128 4.7 + Simple 4 MiB per channel and
    peer, src/init.cc@v2.26.2-1), which the P2P transport keeps in device memory (src/transport/p2p.cc) only where
    ``cudaDeviceCanAccessPeer`` allows. Without P2P, vLLM builds no custom all-reduce ("lacks GPU P2P capability";
    VLLM_SKIP_P2P_CHECK defaults to trusting that same driver report, envs.py@v0.10.1.1-v0.27.1) and NCCL uses SHM,
    whose buffers are host memory (NCCL_SHM_DISABLE docs; src/transport/shm.cc@v2.26.2-1): ``res.p2p`` False charges
    the TP-1 figure (NCCL's small per-communicator structures unsized). Unknown keeps the P2P figure (less KV);
    Hopper keeps its fitted one (symmetric memory without P2P not read from source); across nodes NCCL's NET
    buffers sit in device memory under GPUDirect RDMA (src/transport/net.cc), so the input is for one node.
    """
    r = res.rules
    tp2 = res.tp >= 2
    if r.budget == "absolute":
        return context_gib(gpu, res.tp) + (V1_NON_TORCH_TP2_GIB if tp2 else _v1_absolute_tp1_growth(gpu, r))
    if r.engine == "V0":  # plus the TP communicators' P2P buffers, set up after V0's baseline (v0_comm.py)
        return V0_NON_TORCH_TP2_GIB + v0_p2p_comm_gib(gpu, res.tp, res.p2p) if tp2 else 0.25
    tp1 = V1_NON_TORCH_TP1_GIB if r.version >= V1_NON_TORCH_TP1_GROWTH_SINCE else V1_NON_TORCH_TP1_EARLY_GIB
    if not tp2:
        return tp1
    if r.version >= V1_NON_TORCH_HOPPER_TP2_SINCE and _hopper_or_newer(gpu):
        return 2.12 if res.tp == 2 else 2.22
    return tp1 if res.p2p is False else V1_NON_TORCH_TP2_GIB


def _v1_absolute_tp1_growth(gpu: GpuSpec, rules: VersionRules) -> float:
    """What V1's absolute budget (0.8.0-0.9.0) charges at TP 1 beyond the context, where the context is a startup
    measurement (the catalog's ``context_gib``). That budget charges everything on the device outside torch's
    allocations once the profile ran (v1/worker/gpu_worker.py@0.9.0 ``determine_available_memory``: used memory after
    ``empty_cache`` less ``allocated_bytes.all.current``): the CUDA context and whatever loading, compiling and
    profiling added outside torch. 0.9.1's increase budget charges only that growth, over a snapshot taken once the
    context exists (``init_device`` then ``memory_profiling``, gpu_worker.py@0.9.2), so the two differ by the
    snapshot's used memory alone; the growth is charged at the figure the increase budget gets for the same releases
    (``V1_NON_TORCH_TP1_EARLY_GIB``, fitted at 0.15/0.16 and carried back). A startup line ("Free memory on device ...
    on startup") sees none of it. The size class's figure is not a startup measurement: it was fitted on an absolute
    budget's whole non-torch charge, after the weights and the profile (vllm#10517, 0.6.4: 0.35 GiB), so it keeps
    standing for both. Written post hoc, while looking into the RTX 5090 0.9.0 start's over-prediction. V0 and
    TP >= 2 (``V1_NON_TORCH_TP2_GIB``) keep their figures."""
    return V1_NON_TORCH_TP1_EARLY_GIB if rules.engine == "V1" and gpu.context_gib is not None else 0.0


def _hopper_or_newer(gpu: GpuSpec) -> bool:
    """The growth at TP >= 2 from 0.10 (fitted on H100) comes with buffers only Hopper and newer get: vLLM creates its
    SymmMemCommunicator only for capability 9.0/10.0 (distributed/device_communicators/symm_mem.py, "Device
    capability 8.0 not supported, communicator is not available" in the 0.11.2 A100 logs), and NCCL's NVLS
    buffers need sm90. Below that the smaller figure applies. Capability 12.x (RTX PRO 6000, RTX 5090) gets no
    SymmMem, yet a 4 x RTX PRO 6000 TP 4 start logs 1.70 GiB of non-torch memory, so it keeps the larger figure (a
    TP 2 start on the same box logs less: not modelled); an unknown card takes it too (less KV predicted)."""
    return gpu.capability is None or gpu.capability >= (9, 0)
