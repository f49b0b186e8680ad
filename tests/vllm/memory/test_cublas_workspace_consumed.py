"""torch's cuBLAS workspace charged as consumed memory from vLLM 0.27.0 (``cublas_pin.consumed_workspace_gib``):
allocated after the worker's snapshot and never freed, it is in ``total_consumed`` (utils/mem_utils.py@0.27.0)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.memory import EngineSettings, estimate, resolve
from vllm_remedy.vllm.memory.calibration import estimate_case
from vllm_remedy.vllm.memory.cublas_pin import consumed_workspace_gib
from vllm_remedy.vllm.memory.non_torch import non_torch_gib
from vllm_remedy.vllm.memory.terms import pinned_compile_gib

CASES = Path(__file__).resolve().parents[2] / "data" / "calibration"
QWEN3_32B_AWQ = catalog.model("Qwen/Qwen3-32B-AWQ")
RTX5090 = catalog.gpu("NVIDIA-GeForce-RTX-5090")
WORKSPACE_GIB = 32 / 1024


def _res(version: str, gpu: catalog.GpuSpec = RTX5090, **inputs: str):
    flags = {"max-model-len": "8192", "gpu-memory-utilization": "0.70"}
    return resolve(QWEN3_32B_AWQ, gpu, EngineSettings.from_flags(flags, version, inputs))


def test_the_warm_rtx_5090_start_is_charged_the_32_mib_workspace() -> None:
    """rtx5090-v0.28.0-qwen3-32b-awq-8k-u0.70: a warm compile cache, so no table copy holds the workspace."""
    case = yaml.safe_load((CASES / "rtx5090-v0.28.0-qwen3-32b-awq-8k-u0.70.yaml").read_text())
    res = _res("0.28.0", **{"compile-cache-warm": "true"})
    assert pinned_compile_gib(QWEN3_32B_AWQ, res, RTX5090.capability) == 0.0
    est = estimate_case(case)
    assert est.non_torch_gib == pytest.approx(non_torch_gib(RTX5090, res) + WORKSPACE_GIB)


def test_a_cold_start_whose_table_copy_holds_the_workspace_is_not_charged_twice() -> None:
    res = _res("0.28.0")
    copy = pinned_compile_gib(QWEN3_32B_AWQ, res, RTX5090.capability)
    assert copy > 1.0
    assert consumed_workspace_gib(res, RTX5090.capability, copy) == 0.0
    assert estimate(QWEN3_32B_AWQ, RTX5090, EngineSettings.from_flags(
        {"max-model-len": "8192", "gpu-memory-utilization": "0.70"}, "0.28.0")).non_torch_gib == pytest.approx(
        non_torch_gib(RTX5090, res) + copy)


@pytest.mark.parametrize(("version", "capability", "charged"), [
    ("0.26.0", (12, 0), 0.0),  # before total_consumed: weights + peak increase + non-torch increase
    ("0.27.0", (12, 0), WORKSPACE_GIB),
    ("0.31.0", (9, 0), WORKSPACE_GIB),
    ("0.28.0", None, WORKSPACE_GIB),  # unknown card: the larger workspace, less KV
    ("0.28.0", (8, 9), 0.0),  # 8.125 MiB: may sit in a free rest already charged, not derivable
])
def test_from_0_27_on_capability_9_and_up(version: str, capability: tuple[int, int] | None, charged: float) -> None:
    res = _res(version, **{"compile-cache-warm": "true"})
    assert consumed_workspace_gib(res, capability, 0.0) == pytest.approx(charged)
