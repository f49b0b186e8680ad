"""Device memory the V0 engine's tensor-parallel communicators take when the GPUs have CUDA P2P.

V0 takes its memory baseline in ``Worker.init_device`` before ``init_worker_distributed_environment``
(worker/worker.py@0.7.2: ``self.baseline_snapshot = MemorySnapshot()`` first), so everything the distributed setup and
the profile run put outside PyTorch's allocator is charged as "non_torch_memory" (utils.py@0.7.2 ``memory_profiling``).
With P2P, four things put large buffers in device memory, all sized from source below; without P2P NCCL's SHM
transport keeps its buffers in host memory (src/transport/shm.cc@v2.21.5-1) and vLLM builds no custom all-reduce, so
none of this applies (``non_torch.V0_NON_TORCH_TP2_GIB`` is the P2P-free figure, fitted on an RTX 4090 pair).

1. Two NCCL communicators per TP group. vLLM's ``PyNcclCommunicator`` (created in ``GroupCoordinator.__init__``,
   distributed/parallel_state.py@0.7.2), and torch's ProcessGroupNCCL for the TP ``device_group``, created lazily by
   the first collective on it: V0's ``LogitsProcessor._gather_logits`` calls ``tensor_model_parallel_gather``
   (``torch.distributed.gather`` on the device group; all-gather only on TPU or V1, logits_processor.py@0.7.2) in the
   profile run. NCCL 2.21.5 (the one torch 2.5.1 and vLLM 0.7.2 load: "vLLM is using nccl==2.21.5") connects every
   ring and tree channel at init (src/init.cc@v2.21.5-1 ``initTransportsRank``; lazy runtime connection came in 2.22).
   At TP 2 the tree peers are the ring peers, so each channel holds one send and one receive connection per rank.
2. torch's ``gather`` is ncclSend/ncclRecv to the root (torch/csrc/cuda/nccl.cpp ``gather``), which connects
   ``p2pnChannelsPerPeer`` P2P channels (src/enqueue.cc@v2.21.5-1): rank 0 receives from every peer, the others send.
3. Each communicator's init also connects its local NET proxy and sizes its shared P2P buffer in device memory,
   eagerly while runtime connection is off (src/init.cc@v2.21.5-1 "Connect to local net proxy",
   ``ncclProxyMsgSharedInit``; src/transport/net.cc ``sharedNetBuffersInit``): p2pnChannels x NCCL_SHARED_STEPS (16)
   x the P2P chunk (512 KiB where every path is NVLink, 128 KiB over PCIe; init.cc ``computeBuffSizes``). NVIDIA/nccl
   #2363 reports the same eager buffer (512 MiB at 64 channels) on a single-rank communicator. Without P2P it is a
   few MiB (2 channels x 16 x 128 KiB), inside the fitted P2P-free figure.
4. Custom all-reduce (distributed/device_communicators/custom_all_reduce.py@0.7.2), built only where ``_can_p2p``
   holds (and for more than 2 GPUs only on full NVLink): two ``cudaMalloc`` IPC buffers, ``meta_size() + max_size``
   and ``max_size`` (8 MiB each), i.e. 10 + 8 MiB in 2 MiB pages; ``rank_data`` is a torch tensor (not counted).

Connection buffers (src/init.cc@v2.21.5-1 defaults: LL 512 KiB, LL128 4.6875 MiB, Simple 4 MiB): the P2P transport
(src/transport/p2p.cc@v2.21.5-1) puts LL and LL128 in the receiver's buffer and Simple in the receiver's too, or the
sender's under P2P read (NVLink between sm80 GPUs, src/graph/paths.cc ``ncclTopoCheckP2p``); each side is rounded up
to CUDA_IPC_MIN (2 MiB). vLLM sets NCCL_CUMEM_ENABLE=0 (vllm/__init__.py@0.7.2), so these are plain cudaMalloc
buffers of that size and NCCL's small per-channel structures are not rounded to cuMem's 2 MiB granularity.

Channel counts depend on the topology, which neither logs nor flags give; they are read from NCCL's search, not from
the case. An SXM board is sized as an NVSwitch HGX board: 12 NVLinks of 20 GB/s (src/graph/topo.h SM80_NVLINK_BW)
give 6 ring channels at 40 GB/s, duplicated to 12 (src/graph/search.cc ``ncclTopoDupChannels``) and doubled again
(src/graph/connect.cc ``ncclTopoPostset``): 24 collective channels; P2P channels per peer are
nextPow2(2 x 240 / 20) = 32 (src/graph/paths.cc ``ncclTopoComputeP2pChannels``). A public nccl-tests log of two
A100-SXM4-80GB (NCCL 2.20.5) prints "24 coll channels, ..., 32 p2p channels, 32 p2p channels per peer". A 4-GPU HGX
A100 board (4 NVLinks per pair) gets fewer (8 collective, 8 per peer): the NVSwitch figure is the larger, so less KV.
Other cards are sized as a PCIe Gen4 pair: 2 ring channels at 12 GB/s doubled to 4, and 2 P2P channels per peer
(non-NVLink peers, paths.cc), 4 P2P channels. Hopper's NVLS buffers (sm90 with NVSwitch) are not sized here.

Releases: NCCL 2.18-2.21 (torch 2.1-2.6) connect eagerly and have the NET proxy buffer; V0 on 0.9-0.10 (capability
below 8.0 only) loads NCCL 2.26, which connects at runtime, so there this is an upper bound. 0.5.5-0.6.5 set
NCCL_CUMEM_ENABLE=0 in ``WorkerWrapperBase.init_worker`` (worker/worker_base.py@0.5.5, @0.6.0, @0.6.3, @0.6.5), before
the worker exists, for the driver too (``create_worker``, executor/gpu_executor.py@0.5.5). 0.5.5 runs torch 2.4.0, whose
wheel pins nvidia-nccl-cu12 2.20.5 (eager); it builds the same two communicators per TP group (PyNccl in
``GroupCoordinator.__init__``; torch's device group on the profile's first collective: the driver's tensor broadcast
and ``tensor_model_parallel_gather``, model_executor/layers/logits_processor.py@0.5.5), after its baseline
(``init_device`` reads free memory before ``init_worker_distributed_environment``, worker/worker.py@0.5.5). Its custom
all-reduce buffers are torch tensors (``torch.zeros(meta_size() + max_size)``, ``torch.empty(max_size)``,
custom_all_reduce.py@0.5.5), charged all the same. ``--disable-custom-all-reduce`` is not an input here: its 18 MiB
stay charged where the model assumes P2P (less KV).
"""

from __future__ import annotations

from vllm_remedy.vllm.catalog import GIB, GpuSpec

MIB = 1024**2
_IPC_MIN = 2 * MIB
_LL, _LL128, _SIMPLE = 512 * 1024, 4_915_200, 4 * MIB
_MEM_STRUCT = 4096  # ncclSendMem / ncclRecvMem (MEM_ALIGN, src/include/comm.h@v2.21.5-1)
# (collective channels, P2P channels, P2P channels per peer, P2P chunk bytes) by board, see the module docstring.
NVSWITCH_CHANNELS = (24, 32, 32, 512 * 1024)
PCIE_CHANNELS = (4, 4, 2, 128 * 1024)
NET_SHARED_STEPS = 16  # NCCL_SHARED_STEPS, src/transport/net.cc@v2.21.5-1
CUSTOM_AR_BYTES = 18 * MIB
# The communicators per TP group that exist by the end of V0's profile run: PyNccl's and torch's device group.
NCCL_COMMS = 2


def _align(n: int) -> int:
    return -(-n // _IPC_MIN) * _IPC_MIN


def _conn_bytes(read: bool) -> tuple[int, int]:
    """(send side, receive side) device bytes of one P2P-transport connection (transport/p2p.cc@v2.21.5-1)."""
    send = _align(_MEM_STRUCT + (_SIMPLE if read else 0))
    recv = _align(_MEM_STRUCT + _LL + _LL128 + (0 if read else _SIMPLE))
    return send, recv


def nvlink_board(gpu: GpuSpec) -> bool:
    """An SXM part (HGX board), sized as NVSwitch-connected; anything else as a PCIe pair."""
    return "SXM" in gpu.product.upper()


def v0_p2p_comm_gib(gpu: GpuSpec, tp: int, p2p: bool | None) -> float:
    """Per-rank device memory of V0's TP communicators with CUDA P2P (none without; unknown is sized as P2P, less KV).

    Sized for the rank that holds the most, rank 0 (the engine takes the minimum KV over ranks): per communicator one
    send and one receive connection per collective channel, plus one more receive per channel above 2 ranks (the
    intra-node tree chain's down link differs from the ring's previous rank; checked in source, not in a log), and
    the NET proxy's shared buffer; the gather's receive connections from every peer; custom all-reduce's buffers.
    """
    if tp < 2 or p2p is False:
        return 0.0
    nvl = nvlink_board(gpu)
    coll, p2p_channels, per_peer, chunk = NVSWITCH_CHANNELS if nvl else PCIE_CHANNELS
    read = nvl and gpu.capability == (8, 0)  # P2P read: NVLink between sm80 GPUs only (graph/paths.cc@v2.21.5-1)
    send, recv = _conn_bytes(read)
    per_channel = send + recv + (recv if tp > 2 else 0)
    comms = NCCL_COMMS * (coll * per_channel + p2p_channels * NET_SHARED_STEPS * chunk)
    gather = (tp - 1) * per_peer * recv
    custom_ar = CUSTOM_AR_BYTES if (tp == 2 or nvl) else 0
    return (comms + gather + custom_ar) / GIB
