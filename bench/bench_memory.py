"""Time one in-process estimate (target < 5 ms), the planner's building block. Not a test.

Usage: python bench/bench_memory.py
"""

from __future__ import annotations

import timeit

from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.memory import EngineSettings, estimate

CASES = [
    ("Llama-3.1-8B / H100 / 0.19.0", "meta-llama/Llama-3.1-8B-Instruct", "NVIDIA-H100-80GB-HBM3", "0.19.0",
     {"max-model-len": "8192"}),
    ("Qwen2.5-72B TP2 / H100 / 0.9.2", "Qwen/Qwen2.5-72B-Instruct", "NVIDIA-H100-80GB-HBM3", "0.9.2",
     {"tensor-parallel-size": "2"}),
    ("Llama-3.1-8B / L4 / 0.6.4 (fails)", "meta-llama/Llama-3.1-8B-Instruct", "NVIDIA-L4", "0.6.4", {}),
]


def main() -> None:
    print("| case | flags parsed per call | µs per estimate |")
    print("|---|---|---:|")
    for name, model_id, label, version, flags in CASES:
        model, gpu = catalog.model(model_id), catalog.gpu(label)
        settings = EngineSettings.from_flags(flags, version)
        n = 2000
        t_est = min(timeit.repeat(lambda: estimate(model, gpu, settings), number=n, repeat=5)) / n  # noqa: B023
        t_all = min(timeit.repeat(lambda: estimate(model, gpu, EngineSettings.from_flags(flags, version)),  # noqa: B023
                                  number=n, repeat=5)) / n
        print(f"| {name} | no | {t_est * 1e6:.1f} |")
        print(f"| {name} | yes | {t_all * 1e6:.1f} |")


if __name__ == "__main__":
    main()
