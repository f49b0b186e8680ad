"""Time one in-process budget plan (target < 100 ms) as a CLI run pays it, and again in a warm process. Not a test.

Each case runs in ``--rounds`` fresh processes (model and GPU looked up in the catalog first: "once the config is
resolved"). Per process:

- **first**: the process's first plan — the release tables it reads on first use and an empty estimate cache:
  what one ``vllm-remedy plan`` / deploy run pays;
- **cold**: the same plan again with the planner's process-wide estimate cache cleared (tables already read): the
  plan's own work;
- **repeat**: the same plan 30 more times with the cache warm (a fleet planning one model/GPU/settings on many
  Deployments). This was the only figure before, and it hid the first two.

``--arm NAME=SRC`` (twice) runs another checkout's code side by side, alternating arms (``bench/arms.py``).
Usage: python bench/bench_plan.py [--rounds 5] [--arm base=OTHER/src --arm this=src] [--out result.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from arms import add_arm_options, child_json, load_average, parse_arms, round_order, spread

CASE_NAMES = [
    "runbook: Llama-3.1-8B / L4 / 0.8.5, no max-model-len",
    "same, fp8 allowed",
    "Llama-3.1-70B / A100-40GB / 0.9.2 (weights OOM)",
    "Llama-3.1-8B / L4 / 0.12.0 at 0.95, CUDA-graph capture OOM",
    "Qwen2.5-72B TP2 / H100 / 0.19.0, target 64",
]
REPEATS, COLD = 30, 3


def child(index: int) -> None:
    """Run case ``index`` in this fresh process and print one JSON line of ms figures."""
    from vllm_remedy.policy import Policy
    from vllm_remedy.remedies.budget import BudgetRequest, judge, plan_budget
    from vllm_remedy.vllm import catalog
    from vllm_remedy.vllm.memory import EngineSettings
    from vllm_remedy.vllm.outcomes import Failure

    fp8_ok = Policy.from_mapping({"apiVersion": "vllm-remedy.io/v1alpha1", "kind": "Policy",
                                  "kv_cache_fp8": {"status": "allowed", "evaluated": "bench"},
                                  "flags": {"kv-cache-dtype": {"allowed": ["auto", "fp8"]}}})
    cases = [
        ("meta-llama/Llama-3.1-8B-Instruct", "NVIDIA-L4", EngineSettings(version="0.8.5"), None, None, None),
        ("meta-llama/Llama-3.1-8B-Instruct", "NVIDIA-L4", EngineSettings(version="0.8.5"), fp8_ok, None, None),
        ("meta-llama/Llama-3.1-70B-Instruct", "NVIDIA-A100-SXM4-40GB", EngineSettings(version="0.9.2"), None,
         Failure.OOM_LOADING_WEIGHTS, None),
        ("meta-llama/Llama-3.1-8B-Instruct", "NVIDIA-L4",
         EngineSettings(version="0.12.0", gpu_memory_utilization=0.95, max_model_len=8192), None,
         Failure.CUDAGRAPH_CAPTURE_OOM, None),
        ("Qwen/Qwen2.5-72B-Instruct", "NVIDIA-H100-80GB-HBM3", EngineSettings(version="0.19.0", tp=2), None, None, 64),
    ]
    model_id, label, settings, policy, failure, target = cases[index]
    start = time.perf_counter()
    model, gpu = catalog.model(model_id), catalog.gpu(label)
    lookup = (time.perf_counter() - start) * 1000

    def once() -> tuple[float, int]:
        req = BudgetRequest(model, gpu, settings, policy=policy, failure=failure, target_concurrency=target)
        began = time.perf_counter()
        plan = plan_budget(req)
        return (time.perf_counter() - began) * 1000, len(plan.steps)

    cpu = time.process_time()
    first, rungs = once()
    first_cpu = (time.process_time() - cpu) * 1000
    cold, estimates = [], 0
    for _ in range(COLD):
        judge._estimate.cache_clear()
        judge._resolve.cache_clear()
        cold.append(once()[0])
        estimates = judge._estimate.cache_info().misses
    repeat = [once()[0] for _ in range(REPEATS)]
    print(json.dumps({"lookup": lookup, "first": first, "first_cpu": first_cpu, "cold": statistics.median(cold),
                      "repeat": repeat, "rungs": rungs, "estimates": estimates}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arm_options(parser, default_rounds=5)
    parser.add_argument("--out", type=Path, help="also write the raw figures as JSON")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        child(args.child)
        return
    arms = parse_arms(args.arm)
    got: dict[tuple[str, int], list[dict]] = {}
    load = [load_average()]
    for r in range(args.rounds):
        for name, src in round_order(arms, r):
            for i in range(len(CASE_NAMES)):
                got.setdefault((name, i), []).append(child_json([sys.executable, __file__, "--child", str(i)], src))
    load.append(load_average())
    print(f"load average {load[0]} → {load[1]}; {args.rounds} fresh processes per arm and case; ms")
    print("| case | arm | rungs | estimates per plan | **first plan in a fresh process** (median, min–max) "
          "| its CPU ms | cold estimate cache | repeat median | repeat max |")
    print("|---|---|---:|---:|---|---:|---:|---:|---:|")
    for i, case in enumerate(CASE_NAMES):
        for name, _ in arms:
            runs = got[(name, i)]
            repeats = [t for run in runs for t in run["repeat"]]
            print(f"| {case} | {name} | {runs[0]['rungs']} | {runs[0]['estimates']} "
                  f"| {spread([run['first'] for run in runs])} "
                  f"| {statistics.median(run['first_cpu'] for run in runs):.1f} "
                  f"| {statistics.median(run['cold'] for run in runs):.1f} "
                  f"| {statistics.median(repeats):.1f} | {max(repeats):.1f} |")
        if len(arms) == 2:
            (a, _), (b, _) = arms
            ratio = [statistics.median(run[key] for run in got[(b, i)]) /
                     statistics.median(run[key] for run in got[(a, i)]) for key in ("first", "first_cpu", "cold")]
            print(f"| | **{b}/{a}** | | | **{ratio[0]:.2f}** | {ratio[1]:.2f} | {ratio[2]:.2f} | | |")
    if args.out:
        args.out.write_text(json.dumps({"load": load, "arms": [n for n, _ in arms], "cases": CASE_NAMES,
                                        "runs": {f"{n}/{i}": v for (n, i), v in got.items()}}, indent=1) + "\n")


if __name__ == "__main__":
    main()
