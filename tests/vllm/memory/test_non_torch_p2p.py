"""Non-torch memory at TP >= 2 without CUDA P2P: NCCL's buffers go to host memory, custom all-reduce is not built.

The rule is read from source (see ``non_torch.non_torch_gib``), not fitted: without P2P the TP-1 figure is charged;
unknown keeps the P2P figure (less KV); Hopper, V0 and the "absolute" budgets are left as they were.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from vllm_remedy.errors import UserError
from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.memory import non_torch
from vllm_remedy.vllm.memory.calibration import estimate_case
from vllm_remedy.vllm.memory.settings import EngineSettings, resolve

QWEN = catalog.model("Qwen/Qwen2.5-7B-Instruct")
A100 = catalog.gpu("NVIDIA-A100-SXM4-80GB")
L40S = catalog.gpu("NVIDIA-L40S")
H100 = catalog.gpu("NVIDIA-H100-80GB-HBM3")
CASES = Path(__file__).resolve().parents[2] / "data" / "calibration"


def _non_torch(version: str, p2p: str | None, gpu: catalog.GpuSpec = A100, tp: int = 2) -> float:
    inputs = {"p2p": p2p} if p2p is not None else {}
    settings = EngineSettings.from_flags({"tensor-parallel-size": str(tp), "max-model-len": "16384"}, version, inputs)
    return non_torch.non_torch_gib(gpu, resolve(QWEN, gpu, settings))


@pytest.mark.parametrize(("version", "gpu", "tp1"), [("0.10.1.1", A100, 0.13), ("0.11.2", A100, 0.13),
                                                     ("0.19.0", L40S, 0.27), ("0.9.2", L40S, 0.13)])
def test_without_p2p_only_the_tp1_figure_remains(version: str, gpu: catalog.GpuSpec, tp1: float):
    assert _non_torch(version, "false", gpu) == _non_torch(version, None, gpu, tp=1) == tp1
    assert _non_torch(version, "no", gpu, tp=4) == tp1


@pytest.mark.parametrize("p2p", [None, "unknown", "yes", "true"])
def test_present_or_unknown_keeps_the_larger_figure(p2p: str | None):
    assert _non_torch("0.10.1.1", p2p) == non_torch.V1_NON_TORCH_TP2_GIB == 0.6


@pytest.mark.parametrize(("version", "gpu", "tp"), [("0.19.0", H100, 2), ("0.19.0", H100, 4),
                                                    ("0.8.5", A100, 2), ("0.19.0", A100, 1)])
def test_hopper_v0_absolute_budget_and_tp1_are_unchanged(version: str, gpu: catalog.GpuSpec, tp: int):
    """Hopper's symmetric-memory buffers without P2P are not read from source; 0.8-0.9.0 budget absolutely (CUDA
    context + NCCL); TP 1 has no peers. V0 reads p2p since its communicator term (test_v0_comm.py)."""
    assert _non_torch(version, "false", gpu, tp) == _non_torch(version, None, gpu, tp)


def test_p2p_is_an_input_not_a_vllm_flag():
    with pytest.raises(UserError, match="unrecognized arguments: --p2p"):
        EngineSettings.from_flags({"p2p": "false"}, "0.10.1.1")
    with pytest.raises(UserError, match="p2p: 'maybe' is not true/false"):
        EngineSettings.from_flags({}, "0.10.1.1", {"p2p": "maybe"})
    assert EngineSettings.from_flags({}, "0.10.1.1", {"p2p": "unknown"}).p2p is None


def _cases_with_p2p() -> list[tuple[str, dict]]:
    loaded = ((p.stem, yaml.safe_load(p.read_text())) for p in sorted(CASES.glob("*.yaml")))
    return [(name, case) for name, case in loaded if "p2p" in case]


def test_calibration_p2p_keys_come_from_the_logs_own_lines():
    """A case says p2p only where its log (quoted in log_excerpt) states it: vLLM's "lacks GPU P2P capability" warning
    for no; for yes, the backends line listing CUSTOM (custom all-reduce built, its P2P check passed), V0's
    "Registering N cuda graph addresses" from custom_all_reduce.py (only an enabled CustomAllreduce, which disables
    itself when the P2P check fails, registers graph buffers: distributed/device_communicators/custom_all_reduce.py
    @0.7.2 ``register_graph_buffers``) or the source's own P2P printout."""
    cases = _cases_with_p2p()
    assert {name for name, case in cases if case["p2p"] is False} == {
        "a100-v0.10.1-qwen2-7b-tp2-u0.25", "a100-v0.10.1-qwen2-7b-tp2-u0.5"}
    for name, case in cases:
        excerpt = case["log_excerpt"]
        if case["p2p"] is False:
            assert "Custom allreduce is disabled because your platform lacks GPU P2P capability" in excerpt, name
        else:
            registered = "custom_all_reduce.py" in excerpt and "cuda graph addresses" in excerpt
            assert "Using ['CUSTOM'" in excerpt or "p2p 0<->1 True" in excerpt or registered, name


def test_the_no_p2p_logs_gain_kv_and_stay_at_or_below_it():
    """Post hoc (held-out cases, errors known): the two same-node dennislee22 TP 2 starts, -5.3 and -2.1 % before."""
    for name, case in _cases_with_p2p():
        if case["p2p"] is not False:
            continue
        unknown = {k: v for k, v in case.items() if k != "p2p"}
        logged = case["logged"]["kv_cache_tokens"]
        assert estimate_case(unknown).kv_cache_tokens < estimate_case(case).kv_cache_tokens <= logged, name
