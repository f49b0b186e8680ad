"""V1's absolute budget (0.8.0-0.9.0) charges the non-torch growth that 0.9.1's increase budget charges, on top of a
CUDA context measured at startup: by source the two budgets differ only by the startup snapshot's used memory
(v1/worker/gpu_worker.py@0.9.0 ``determine_available_memory``; @0.9.2 ``init_device`` + ``memory_profiling``)."""

from __future__ import annotations

import pytest

from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.memory.core import estimate
from vllm_remedy.vllm.memory.non_torch import V1_NON_TORCH_TP1_EARLY_GIB, context_gib
from vllm_remedy.vllm.memory.settings import EngineSettings

MODEL = "Qwen/Qwen2.5-7B-Instruct"


def _non_torch(gpu_name: str, version: str) -> float:
    settings = EngineSettings.from_flags({}, version, {})
    return estimate(catalog.model(MODEL), catalog.gpu(gpu_name), settings).non_torch_gib


def test_a_startup_measured_context_gets_the_growth_beside_it() -> None:
    """RTX 5090 (catalog context from its startup lines): 0.9.0 charges context + growth, 0.9.1 the growth alone."""
    gpu = catalog.gpu("NVIDIA-GeForce-RTX-5090")
    assert gpu.context_gib is not None
    assert _non_torch(gpu.product, "0.9.0") == pytest.approx(context_gib(gpu, 1) + V1_NON_TORCH_TP1_EARLY_GIB)
    assert _non_torch(gpu.product, "0.9.0") - _non_torch(gpu.product, "0.9.1") == pytest.approx(context_gib(gpu, 1))


@pytest.mark.parametrize("gpu_name", ["NVIDIA-L40S", "NVIDIA-L4"])
def test_the_size_class_figure_stands_for_both(gpu_name: str) -> None:
    """No startup measurement: the class's figure was fitted on an absolute budget's whole non-torch charge."""
    gpu = catalog.gpu(gpu_name)
    assert gpu.context_gib is None
    assert _non_torch(gpu_name, "0.9.0") == pytest.approx(context_gib(gpu, 1))


def test_v0_absolute_keeps_the_context_alone() -> None:
    """0.6.4 (V0, absolute): no V1 growth, whatever the context's source."""
    gpu = catalog.gpu("NVIDIA-GeForce-RTX-5090")
    est = estimate(catalog.model("meta-llama/Llama-3.1-8B-Instruct"), gpu, EngineSettings.from_flags({}, "0.6.4", {}))
    assert est.non_torch_gib == pytest.approx(context_gib(gpu, 1))
