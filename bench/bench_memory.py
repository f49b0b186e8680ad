"""Time one in-process estimate (target < 5 ms), the planner's building block: the first in a fresh process, and
steady state. Not a test.

A case whose model is a path ending in ``.json`` reads that config.json as ``vllm-remedy estimate --model-config``
does (``hub.spec_from_config``), with the case's edits merged in. The published Qwen2.5-72B-Instruct-AWQ (padded,
intermediate 29696) is in ``awq_marlin_table``; the same config with the YaRN x4 ``rope_scaling`` the Qwen2.5 model
cards tell long-context users to add ("Processing Long Texts": a rotary cache of 131,072 positions) is not, so its
first estimate replays the AWQ Marlin load (80 layers) — or reads the replay from the disk memo
(``awq_marlin_memo``): that case runs in two processes sharing one fresh ``HF_ASSETS_CACHE``, **cold** (nothing
memoized) then **warm** (what the first wrote).
Every child gets a fresh empty ``HF_ASSETS_CACHE``, so the bench never writes into the user's cache.

Each case runs in ``--rounds`` fresh processes (model and GPU looked up in the catalog first). **first**: the
process's first estimate, which reads the release tables it needs on first use — what one ``vllm-remedy estimate``
or deploy run pays; **steady**: the best of 5 × 500 estimates of the same settings afterwards, with and without
parsing the flags each time. ``--arm NAME=SRC`` (twice) compares checkouts side by side (``bench/arms.py``).

Usage: python bench/bench_memory.py [--rounds 5] [--arm base=OTHER/src --arm this=src]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import timeit
from pathlib import Path
from typing import Any

from arms import add_arm_options, child_json, load_average, parse_arms, round_order, spread

CONFIGS = Path(__file__).resolve().parent.parent / "tests" / "data" / "configs"

# The Qwen2.5 model cards' long-context edit to config.json ("Processing Long Texts").
YARN_X4 = {"rope_scaling": {"factor": 4.0, "original_max_position_embeddings": 32768, "type": "yarn"}}
MEMO = "memo"  # the case runs cold then warm against one fresh memo folder

CASES: list[tuple[Any, ...]] = [
    ("Llama-3.1-8B / H100 / 0.19.0", "meta-llama/Llama-3.1-8B-Instruct", "NVIDIA-H100-80GB-HBM3", "0.19.0",
     {"max-model-len": "8192"}),
    ("Qwen2.5-72B TP2 / H100 / 0.9.2", "Qwen/Qwen2.5-72B-Instruct", "NVIDIA-H100-80GB-HBM3", "0.9.2",
     {"tensor-parallel-size": "2"}),
    ("Llama-3.1-8B / L4 / 0.6.4 (fails)", "meta-llama/Llama-3.1-8B-Instruct", "NVIDIA-L4", "0.6.4", {}),
    ("Qwen3-32B-AWQ / RTX 5090 / 0.28.0", "Qwen/Qwen3-32B-AWQ", "NVIDIA-GeForce-RTX-5090", "0.28.0",
     {"max-model-len": "8192", "gpu-memory-utilization": "0.70"}),
    ("Qwen2.5-72B-AWQ config.json TP2 / A100 80GB / 0.28.0", str(CONFIGS / "Qwen2.5-72B-Instruct-AWQ.json"),
     "NVIDIA-A100-SXM4-80GB", "0.28.0", {"max-model-len": "8192", "tensor-parallel-size": "2"}),
    ("Qwen2.5-72B-AWQ config.json + YaRN x4 TP2 / A100 80GB / 0.28.0", str(CONFIGS / "Qwen2.5-72B-Instruct-AWQ.json"),
     "NVIDIA-A100-SXM4-80GB", "0.28.0", {"max-model-len": "8192", "tensor-parallel-size": "2"}, YARN_X4, MEMO),
]


def child(index: int) -> None:
    """Run case ``index`` in this fresh process and print one JSON line (first in ms, steady in µs)."""
    from vllm_remedy import hub
    from vllm_remedy.vllm import catalog
    from vllm_remedy.vllm.memory import EngineSettings, estimate

    _, model_id, label, version, flags, *rest = CASES[index]
    if model_id.endswith(".json"):  # as --model-config reads it (commands/_engine_args.load_model_source)
        config = hub.config_from_json(hub.read_file(model_id, model_id), model_id)
        config.update(rest[0] if rest else {})
        model = hub.spec_from_config(config, model_id, model_id)
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
    runs = [(i, state) for i, case in enumerate(CASES) for state in (("cold", "warm") if MEMO in case else ("",))]
    got: dict[tuple[str, int, str], list[dict]] = {}
    load = load_average()
    for r in range(args.rounds):
        for name, src in round_order(arms, r):
            for i, state in runs:
                if state != "warm":  # a warm run reuses the folder its cold run just filled
                    folder = tempfile.TemporaryDirectory(prefix="bench-memo-")
                os.environ["HF_ASSETS_CACHE"] = folder.name  # children inherit it (arms.env_for)
                argv = [sys.executable, __file__, "--child", str(i)]
                got.setdefault((name, i, state), []).append(child_json(argv, src))
    print(f"load average {load} → {load_average()}; {args.rounds} fresh processes per arm and case")
    print("| case | arm | **first estimate in a fresh process, ms** (median, min–max) | its CPU ms | steady µs | "
          "steady µs, flags parsed per call |")
    print("|---|---|---|---:|---:|---:|")
    for i, state in runs:
        case = CASES[i][0] + (f" ({state} memo)" if state else "")
        for name, _ in arms:
            rows = got[(name, i, state)]
            print(f"| {case} | {name} | {spread([run['first'] for run in rows])} "
                  f"| {statistics.median(run['first_cpu'] for run in rows):.1f} "
                  f"| {statistics.median(run['steady_us'] for run in rows):.1f} "
                  f"| {statistics.median(run['parsed_us'] for run in rows):.1f} |")
        if len(arms) == 2:
            (a, _), (b, _) = arms
            wall, cpu = (statistics.median(run[k] for run in got[(b, i, state)]) /
                         statistics.median(run[k] for run in got[(a, i, state)]) for k in ("first", "first_cpu"))
            print(f"| | **{b}/{a}** | **{wall:.2f}** | {cpu:.2f} | | |")


if __name__ == "__main__":
    main()
