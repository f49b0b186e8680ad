#!/usr/bin/env python3
"""Chaos soak: every deploy with ``-y`` many times under seeded faults; counts runs, faults, checks, violations.

    .venv/bin/python bench/chaos_soak.py --runs 1000 --out bench/chaos_soak.result.json

Each run is one deploy on a fresh rehearsal cluster through a fault-injecting proxy (tests/fixtures/
chaos_world.py: lost and doubled PATCH answers, resets, delays, a colleague's concurrent edit); the
invariants are read off the cluster after the run. Seeds are consecutive from ``--first-seed`` and the
scenarios rotate, so a violation is reproduced with ``--first-seed SEED --runs 1 --only SCENARIO``.
The CI suite runs a seeded subset of the same runs (tests/chaos/test_deploys.py).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from fixtures.chaos_world import SCENARIOS, run_once  # noqa: E402
from fixtures.pyinfra_run import start_rehearsal  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--first-seed", type=int, default=1000)
    parser.add_argument("--only", choices=sorted(SCENARIOS), action="append")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--budget-seconds", type=float, default=0.0, help="stop starting runs after this long")
    args = parser.parse_args(argv)
    names = args.only or sorted(SCENARIOS)
    started = time.monotonic()
    runs, checks, faults, codes = 0, 0, Counter[str](), Counter[str]()
    violations: list[dict[str, object]] = []
    for i in range(args.runs):
        if args.budget_seconds and time.monotonic() - started > args.budget_seconds:
            break
        seed, name = args.first_seed + i, names[i % len(names)]
        with tempfile.TemporaryDirectory() as tmp:
            world = start_rehearsal(Path(tmp))
            try:
                out = run_once(world, name, seed)
            finally:
                world.stop()
        runs += 1
        checks += out.checks
        faults.update({k: v for k, v in out.faults.items() if v})
        codes[f"{name}:exit {out.returncode}"] += 1
        if out.violations:
            violations.append({"scenario": name, "seed": seed, "violations": out.violations})
            print(f"VIOLATION {name} seed {seed}: {out.violations}", file=sys.stderr, flush=True)
        if runs % 25 == 0:
            print(f"{runs} runs, {sum(faults.values())} faults, {checks} checks, {len(violations)} violations",
                  file=sys.stderr, flush=True)
    result = {"runs": runs, "faults": dict(faults), "faults_total": sum(faults.values()), "invariant_checks": checks,
              "violations": violations, "exit_codes": dict(sorted(codes.items())),
              "seconds": round(time.monotonic() - started, 1), "first_seed": args.first_seed}
    text = json.dumps(result, indent=2)
    if args.out:
        args.out.write_text(text + "\n")
    print(text)
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
