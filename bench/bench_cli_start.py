"""Wall and CPU time of one ``vllm-remedy estimate`` process, and of importing what it imports. Not a test.

Every CLI and deploy run is a new process, and the test suite starts thousands of them, so the start-up — Python,
the imports a command needs, the release tables it reads — is paid every time. Three commands per arm, each
``--rounds`` times, arms alternating (``bench/arms.py``): ``python -c pass`` (the interpreter alone), ``import``
(the CLI and the estimate command's modules, nothing run) and the whole ``estimate`` run. CPU is user + system of
the child, steadier than wall time on a shared machine. Run ``python -m compileall src`` in each checkout first:
with PYTHONDONTWRITEBYTECODE set, an uncompiled tree recompiles every module in every run.

Usage: python bench/bench_cli_start.py [--rounds 7] [--arm base=OTHER/src --arm this=src]
"""

from __future__ import annotations

import argparse
import statistics
import sys

from arms import add_arm_options, load_average, parse_arms, round_order, run_child, spread

ESTIMATE = ["-m", "vllm_remedy", "estimate", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "NVIDIA-L40S",
            "--max-model-len", "16384"]
COMMANDS = [
    ("python -c pass", ["-c", "pass"]),
    ("import cli + estimate", ["-c", "import vllm_remedy.cli, vllm_remedy.commands.estimate"]),
    ("vllm-remedy estimate", ESTIMATE),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arm_options(parser, default_rounds=7)
    args = parser.parse_args()
    arms = parse_arms(args.arm)
    got: dict[tuple[str, int], list[tuple[float, float]]] = {}
    load = load_average()
    for r in range(args.rounds):
        for name, src in round_order(arms, r):
            for i, (_, argv) in enumerate(COMMANDS):
                wall, cpu, _ = run_child([sys.executable, *argv], src)
                got.setdefault((name, i), []).append((wall, cpu))
    print(f"load average {load} → {load_average()}; {args.rounds} processes per arm and command; ms")
    print("| command | arm | wall (median, min–max) | CPU user+sys (median, min–max) |")
    print("|---|---|---|---|")
    for i, (label, _) in enumerate(COMMANDS):
        for name, _ in arms:
            runs = got[(name, i)]
            print(f"| {label} | {name} | {spread([w for w, _ in runs])} | {spread([c for _, c in runs])} |")
        if len(arms) == 2:
            (a, _), (b, _) = arms
            wall, cpu = (statistics.median(run[k] for run in got[(b, i)]) /
                         statistics.median(run[k] for run in got[(a, i)]) for k in (0, 1))
            print(f"| | **{b}/{a}** | {wall:.2f} | **{cpu:.2f}** |")


if __name__ == "__main__":
    main()
