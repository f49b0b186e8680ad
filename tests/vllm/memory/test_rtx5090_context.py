"""The RTX 5090's CUDA context as its own startup lines measure it (catalog ``context_gib``), not the size class's.

Every TP-1 RTX 5090 startup line read prints "Free memory on device (30.86/31.36 GiB) on startup": 0.50 GiB held by
the new process before its weights load (Drolsey/syslab-server's 0.28.0 starts, in tests/data/calibration). The class
figure for cards under 70 GiB is 0.37 (RTX 3090). vLLM 0.9.0's absolute V1 budget charges everything on the device
outside torch's allocations (v1/worker/gpu_worker.py@0.9.0 ``determine_available_memory``), the context included.
"""

from __future__ import annotations

from dataclasses import replace

from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.memory.core import estimate
from vllm_remedy.vllm.memory.non_torch import CONTEXT_SMALL_GPU_GIB, V1_NON_TORCH_TP1_EARLY_GIB, context_gib
from vllm_remedy.vllm.memory.settings import EngineSettings

RTX_5090 = "NVIDIA-GeForce-RTX-5090"


def test_the_catalog_carries_the_5090s_logged_context() -> None:
    gpu = catalog.gpu(RTX_5090)
    assert gpu.context_gib == 0.50 and context_gib(gpu, 1) == 0.50
    assert CONTEXT_SMALL_GPU_GIB < 0.50  # the size class's figure is what it replaces


def test_the_absolute_budget_charges_it() -> None:
    """0.9.0 (absolute): the context is part of what the budget charges beside torch's peak (with V1's growth,
    test_v1_absolute_growth.py)."""
    gpu = catalog.gpu(RTX_5090)
    model = catalog.model("meta-llama/Llama-3.1-8B-Instruct")
    est = estimate(model, gpu, EngineSettings.from_flags({"max-model-len": "8192"}, "0.9.0", {"flashinfer": "true"}))
    assert est.non_torch_gib == 0.50 + V1_NON_TORCH_TP1_EARLY_GIB


def test_an_increase_budget_does_not() -> None:
    """0.28.0 (increase over the startup snapshot): the context is outside the budget, so it moves no KV."""
    gpu = catalog.gpu(RTX_5090)
    model = catalog.model("meta-llama/Llama-3.1-8B-Instruct")
    settings = EngineSettings.from_flags({"max-model-len": "8192"}, "0.28.0", {})
    class_sized = replace(gpu, context_gib=None)  # the size class's 0.37
    assert estimate(model, gpu, settings).kv_cache_tokens == estimate(model, class_sized, settings).kv_cache_tokens
