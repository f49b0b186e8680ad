"""The main demo: the runbook's bad rollout on the built-in rehearsal cluster, restored by deploys/restore.py.

`vllm-remedy rehearse` = `vllm-remedy gameday run bad-rollout --cluster local`: it starts the cluster, rolls
out the bad revision, lets the real pyinfra deploy roll it back, and prints where the report is.
Exit 0 when the game passed, 1 when it failed, 130 after Ctrl-C.

Examples:
  vllm-remedy rehearse
  vllm-remedy rehearse --scenario gpu-swap --report-dir /tmp/reports -o json
"""

from __future__ import annotations

import argparse
from pathlib import Path

NAME = "rehearse"
ORDER = 10
HELP = "run the bad-rollout game day on the built-in rehearsal cluster and point to its report"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scenario", default="bad-rollout", help="shipped scenario (default: %(default)s)")
    parser.add_argument("--speed", type=float, default=600.0, help="simulated seconds per real second")
    parser.add_argument("--report-dir", type=Path, default=Path("gameday-reports"), help="where the report goes")
    parser.add_argument("-o", "--output", choices=("text", "json"), default="text")


def run(args: argparse.Namespace) -> int:
    from vllm_remedy.commands import gameday

    return gameday.run(argparse.Namespace(action="run", scenario=args.scenario, all=False, cluster="local",
                                          kubeconfig=None, speed=args.speed, report_dir=args.report_dir,
                                          allow_prod=False, output=args.output, confirmed=None,
                                          reality=None, reality_seed=None))  # the scenario's own reality
