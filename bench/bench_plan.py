"""Time one in-process budget plan (target < 100 ms), median of repeated runs. Not a test.

Each run builds a fresh request so the planner's estimate cache starts empty, as in one CLI call.
Usage: python bench/bench_plan.py
"""

from __future__ import annotations

import statistics
import time

from vllm_remedy.policy import Policy
from vllm_remedy.remedies.budget import BudgetRequest, plan_budget
from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.memory import EngineSettings
from vllm_remedy.vllm.outcomes import Failure

FP8_OK = Policy.from_mapping({"apiVersion": "vllm-remedy.io/v1alpha1", "kind": "Policy",
                              "kv_cache_fp8": {"status": "allowed", "evaluated": "bench"},
                              "flags": {"kv-cache-dtype": {"allowed": ["auto", "fp8"]}}})
CASES = [
    ("runbook: Llama-3.1-8B / L4 / 0.8.5, no max-model-len", "meta-llama/Llama-3.1-8B-Instruct", "NVIDIA-L4",
     EngineSettings(version="0.8.5"), None, None),
    ("same, fp8 allowed", "meta-llama/Llama-3.1-8B-Instruct", "NVIDIA-L4", EngineSettings(version="0.8.5"),
     FP8_OK, None),
    ("Llama-3.1-70B / A100-40GB / 0.9.2 (weights OOM)", "meta-llama/Llama-3.1-70B-Instruct", "NVIDIA-A100-SXM4-40GB",
     EngineSettings(version="0.9.2"), None, Failure.OOM_LOADING_WEIGHTS),
    ("Llama-3.1-8B / L4 / 0.12.0 at 0.95, CUDA-graph capture OOM", "meta-llama/Llama-3.1-8B-Instruct", "NVIDIA-L4",
     EngineSettings(version="0.12.0", gpu_memory_utilization=0.95, max_model_len=8192), None,
     Failure.CUDAGRAPH_CAPTURE_OOM),
    ("Qwen2.5-72B TP2 / H100 / 0.19.0, target 64", "Qwen/Qwen2.5-72B-Instruct", "NVIDIA-H100-80GB-HBM3",
     EngineSettings(version="0.19.0", tp=2), None, None),
]


def main() -> None:
    print("| case | rungs | median ms | max ms |")
    print("|---|---:|---:|---:|")
    for name, model_id, label, settings, policy, failure in CASES:
        model, gpu = catalog.model(model_id), catalog.gpu(label)
        target = 64 if "target 64" in name else None
        times, rungs = [], 0
        for _ in range(30):
            req = BudgetRequest(model, gpu, settings, policy=policy, failure=failure, target_concurrency=target)
            start = time.perf_counter()
            plan = plan_budget(req)
            times.append((time.perf_counter() - start) * 1000)
            rungs = len(plan.steps)
        print(f"| {name} | {rungs} | {statistics.median(times):.1f} | {max(times):.1f} |")


if __name__ == "__main__":
    main()
