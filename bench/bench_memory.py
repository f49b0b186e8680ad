"""Time one in-process estimate (target < 5 ms), the planner's building block: the first in a fresh process, and
steady state. Not a test.

A case whose model is a path ending in ``.json`` reads that config.json as ``vllm-remedy estimate --model-config``
does (``hub.spec_from_config``): the padded Qwen2.5-72B-Instruct-AWQ (intermediate 29696) is in neither the catalog
nor ``awq_marlin_table``, so its first estimate replays the AWQ Marlin load (80 layers).

Each case runs in ``--rounds`` fresh processes (model and GPU looked up in the catalog first). **first**: the
process's first estimate, which reads the release tables it needs on first use — what one ``vllm-remedy estimate``
or deploy run pays; **steady**: the best of 5 × 500 estimates of the same settings afterwards, with and without
parsing the flags each time. ``--arm NAME=SRC`` (twice) compares checkouts side by side (``bench/arms.py``).

Usage: python bench/bench_memory.py [--rounds 5] [--arm base=OTHER/src --arm this=src]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import timeit
from pathlib import Path

from arms import add_arm_options, child_json, load_average, parse_arms, round_order, spread

CONFIGS = Path(__file__).resolve().parent.parent / "tests" / "data" / "configs"

CASES = [
    ("Llama-3.1-8B / H100 / 0.19.0", "meta-llama/Llama-3.1-8B-Instruct", "NVIDIA-H100-80GB-HBM3", "0.19.0",
     {"max-model-len": "8192"}),
    ("Qwen2.5-72B TP2 / H100 / 0.9.2", "Qwen/Qwen2.5-72B-Instruct", "NVIDIA-H100-80GB-HBM3", "0.9.2",
     {"tensor-parallel-size": "2"}),
    ("Llama-3.1-8B / L4 / 0.6.4 (fails)", "meta-llama/Llama-3.1-8B-Instruct", "NVIDIA-L4", "0.6.4", {}),
    ("Qwen3-32B-AWQ / RTX 5090 / 0.28.0", "Qwen/Qwen3-32B-AWQ", "NVIDIA-GeForce-RTX-5090", "0.28.0",
     {"max-model-len": "8192", "gpu-memory-utilization": "0.70"}),
    ("Qwen2.5-72B-AWQ config.json TP2 / A100 80GB / 0.28.0", str(CONFIGS / "Qwen2.5-72B-Instruct-AWQ.json"),
     "NVIDIA-A100-SXM4-80GB", "0.28.0", {"max-model-len": "8192", "tensor-parallel-size": "2"}),
]


def child(index: int) -> None:
    """Run case ``index`` in this fresh process and print one JSON line (first in ms, steady in µs)."""
    from vllm_remedy import hub
    from vllm_remedy.vllm import catalog
    from vllm_remedy.vllm.memory import EngineSettings, estimate

    _, model_id, label, version, flags = CASES[index]
    if model_id.endswith(".json"):  # as --model-config reads it (commands/_engine_args.load_model_source)
        model = hub.spec_from_config(hub.config_from_json(hub.read_file(model_id, model_id), model_id), model_id,
                                     model_id)
    else:
        model = catalog.model(model_id)
    gpu = catalog.gpu(label)
    settings = EngineSettings.from_flags(flags, version)
    start, cpu = time.perf_counter(), time.process_time()
    estimate(model, gpu, settings)
    first, first_cpu = (time.perf_counter() - start) * 1000, (time.process_time() - cpu) * 1000
    n = 500
    steady = min(timeit.repeat(lambda: estimate(model, gpu, settings), number=n, repeat=5)) / n
    parsed = min(timeit.repeat(lambda: estimate(model, gpu, EngineSettings.from_flags(flags, version)),
                               number=n, repeat=5)) / n
    print(json.dumps({"first": first, "first_cpu": first_cpu, "steady_us": steady * 1e6, "parsed_us": parsed * 1e6}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arm_options(parser, default_rounds=5)
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        child(args.child)
        return
    arms = parse_arms(args.arm)
    got: dict[tuple[str, int], list[dict]] = {}
    load = load_average()
    for r in range(args.rounds):
        for name, src in round_order(arms, r):
            for i in range(len(CASES)):
                got.setdefault((name, i), []).append(child_json([sys.executable, __file__, "--child", str(i)], src))
    print(f"load average {load} → {load_average()}; {args.rounds} fresh processes per arm and case")
    print("| case | arm | **first estimate in a fresh process, ms** (median, min–max) | its CPU ms | steady µs | "
          "steady µs, flags parsed per call |")
    print("|---|---|---|---:|---:|---:|")
    for i, (case, *_) in enumerate(CASES):
        for name, _ in arms:
            runs = got[(name, i)]
            print(f"| {case} | {name} | {spread([run['first'] for run in runs])} "
                  f"| {statistics.median(run['first_cpu'] for run in runs):.1f} "
                  f"| {statistics.median(run['steady_us'] for run in runs):.1f} "
                  f"| {statistics.median(run['parsed_us'] for run in runs):.1f} |")
        if len(arms) == 2:
            (a, _), (b, _) = arms
            wall, cpu = (statistics.median(run[k] for run in got[(b, i)]) /
                         statistics.median(run[k] for run in got[(a, i)]) for k in ("first", "first_cpu"))
            print(f"| | **{b}/{a}** | **{wall:.2f}** | {cpu:.2f} | | |")


if __name__ == "__main__":
    main()
