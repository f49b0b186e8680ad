"""Run a benchmark's child in fresh processes, one arm per source tree, alternating arms round by round.

A first call in a process pays what a CLI or deploy run pays (tables read, caches empty); only a new process
measures it. ``--arm NAME=SRC`` puts another checkout's ``src`` first on the child's ``PYTHONPATH`` (the same
interpreter), so two trees run side by side under the same machine noise; without ``--arm`` the child runs this
environment's code. Arms alternate A B / B A … so neither always runs right after the other.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any


def add_arm_options(parser: argparse.ArgumentParser, default_rounds: int) -> None:
    """``--arm NAME=SRC`` (repeatable) and ``--rounds``."""
    parser.add_argument("--arm", action="append", default=[], metavar="NAME=SRC",
                        help="run the child with SRC first on PYTHONPATH (repeat to compare checkouts)")
    parser.add_argument("--rounds", type=int, default=default_rounds, help="fresh processes per arm and case")


def parse_arms(specs: Sequence[str]) -> list[tuple[str, str | None]]:
    """``NAME=SRC`` pairs; one arm ``this`` (no PYTHONPATH change) when none is given."""
    if not specs:
        return [("this", None)]
    out = []
    for spec in specs:
        name, sep, src = spec.partition("=")
        if not sep or not name or not src:
            raise SystemExit(f"--arm wants NAME=SRC, got {spec!r}")
        out.append((name, os.path.abspath(src)))
    return out


def env_for(src: str | None) -> dict[str, str]:
    """This environment with ``src`` first on PYTHONPATH (unchanged for None)."""
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join([src, *filter(None, [env.get("PYTHONPATH")])])
    return env


def round_order(arms: list[tuple[str, str | None]], index: int) -> list[tuple[str, str | None]]:
    """The arms in this round's order: as given in even rounds, reversed in odd ones."""
    return arms if index % 2 == 0 else arms[::-1]


def run_child(argv: list[str], src: str | None) -> tuple[float, float, str]:
    """(wall ms, CPU ms user+sys, stdout) of one child process; exits on a failed child."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, env=env_for(src), capture_output=True, text=True)
    wall = (time.perf_counter() - start) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"child failed ({done.returncode}): {' '.join(argv)}\n{done.stderr}")
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    return wall, cpu, done.stdout


def child_json(argv: list[str], src: str | None) -> dict[str, Any]:
    """The JSON document a child printed last."""
    return json.loads(run_child(argv, src)[2].strip().splitlines()[-1])


def spread(values: Sequence[float]) -> str:
    """``median (min–max)``, one decimal."""
    return f"{statistics.median(values):.1f} ({min(values):.1f}–{max(values):.1f})"


def load_average() -> str:
    """The 1-minute load average, for the report's context."""
    return f"{os.getloadavg()[0]:.1f}"
