"""V0's P2P communicator buffers (v0_comm): sized from vLLM 0.7.2 / NCCL 2.21.5 source, not fitted."""

from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.memory.v0_comm import MIB, v0_p2p_comm_gib

GIB = 1024**3


def test_nvswitch_a100_pair_is_two_communicators_gather_and_custom_allreduce() -> None:
    """2 communicators x (24 channels x (6 MiB send + 6 MiB receive) + the NET proxy's 32 x 16 x 512 KiB), 32 x 6 MiB
    gather, 18 MiB custom all-reduce: 1.27 GiB."""
    gpu = catalog.gpu("NVIDIA-A100-SXM4-40GB")
    expected = (2 * (24 * 12 + 256) + 32 * 6 + 18) * MIB / GIB
    assert abs(v0_p2p_comm_gib(gpu, 2, None) - expected) < 1e-9
    assert v0_p2p_comm_gib(gpu, 2, True) == v0_p2p_comm_gib(gpu, 2, None)


def test_no_p2p_or_tp1_charges_nothing() -> None:
    gpu = catalog.gpu("NVIDIA-A100-SXM4-40GB")
    assert v0_p2p_comm_gib(gpu, 2, False) == 0.0
    assert v0_p2p_comm_gib(gpu, 1, None) == 0.0


def test_pcie_pair_without_p2p_read() -> None:
    """2 x (4 channels x (2 MiB send + 10 MiB receive) + 4 x 16 x 128 KiB), rank 0's 2 gather receives x 10 MiB,
    18 MiB custom AR."""
    gpu = catalog.gpu("NVIDIA-L40S")
    expected = (2 * (4 * 12 + 8) + 2 * 10 + 18) * MIB / GIB
    assert abs(v0_p2p_comm_gib(gpu, 2, None) - expected) < 1e-9


def test_more_ranks_hold_more_on_rank_0() -> None:
    """Above 2 ranks the tree adds a receive per channel and rank 0 gathers from every peer; PCIe has no custom AR."""
    sxm = catalog.gpu("NVIDIA-A100-SXM4-80GB")
    pcie = catalog.gpu("NVIDIA-A100-PCIE-40GB")
    assert v0_p2p_comm_gib(sxm, 4, None) > v0_p2p_comm_gib(sxm, 2, None)
    assert abs(v0_p2p_comm_gib(pcie, 4, None) - (2 * (4 * 22 + 8) + 3 * 2 * 10) * MIB / GIB) < 1e-9


def test_v0_non_torch_adds_the_term_unless_p2p_is_false() -> None:
    """The fitted 0.4 GiB is the P2P-free figure (an RTX 4090 pair); P2P present or unknown adds the buffers."""
    from vllm_remedy.vllm.memory.non_torch import V0_NON_TORCH_TP2_GIB, non_torch_gib
    from vllm_remedy.vllm.memory.settings import EngineSettings, resolve

    model = catalog.model("Qwen/Qwen2.5-7B-Instruct")
    gpu = catalog.gpu("NVIDIA-A100-SXM4-80GB")

    def non_torch(inputs: dict[str, str]) -> float:
        settings = EngineSettings.from_flags({"tensor-parallel-size": "2", "max-model-len": "16384"}, "0.7.2", inputs)
        return non_torch_gib(gpu, resolve(model, gpu, settings))

    assert non_torch({"p2p": "false"}) == V0_NON_TORCH_TP2_GIB
    assert non_torch({}) == non_torch({"p2p": "true"}) == V0_NON_TORCH_TP2_GIB + v0_p2p_comm_gib(gpu, 2, None)
