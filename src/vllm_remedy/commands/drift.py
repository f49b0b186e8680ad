"""Check every host of an inventory against its policy without changing anything (scheduled drift check).

Per host: explicit --max-model-len, flags within bounds, an allowed known-good unit (image + model revision +
flags), the GPU pinned as the policy says, no --enforce-eager toggle past its expiry, predicted maximum
concurrency >= the policy's peak — and the fix the deploys would make (their operations, planned: the diff and
the prediction). A host that could not be checked is an error, never "no drift".

Exit codes:
  0 no drift, 1 drift, 2 error (also bad input)
  with --detailed-exitcode: 0 no drift, 2 drift, 1 error (also bad input)
  3 in both: drift whose fix the deploys refuse (GitOps stance, predicted not to fit, policy): a run would stop there

Examples:
  vllm-remedy drift -i inventories/local.py
  vllm-remedy drift -i inventories/prod.py --limit llama_8b -o json --detailed-exitcode
  vllm-remedy drift -i inventory.py --metrics-file /var/lib/node-exporter/vllm-remedy-drift.prom
"""

from __future__ import annotations

import argparse
import sys
import time

from vllm_remedy.commands import _fleet
from vllm_remedy.drift import report
from vllm_remedy.drift.child import run_child
from vllm_remedy.errors import UserError

NAME = "drift"
ORDER = 60
HELP = "check every host against its policy, show the fix; exit 0 none / 1 drift / 2 error / 3 fix refused"
JOB = "vllm-remedy-drift"


def configure(parser: argparse.ArgumentParser) -> None:
    _fleet.add_inventory_arguments(parser)
    parser.add_argument("--detailed-exitcode", action="store_true",
                        help="Terraform/helm-diff exit codes: 0 no drift, 2 drift, 1 error")
    _fleet.add_metrics_arguments(parser, JOB)


def run(args: argparse.Namespace) -> int:
    """Run the check; under --detailed-exitcode even bad input exits 1 (an error), never 2 (drift)."""
    try:
        return _run(args)
    except UserError as exc:
        if not args.detailed_exitcode:
            raise
        print(f"vllm-remedy: error: {exc}", file=sys.stderr)
        return report.EXIT[True][report.ERROR]


def _run(args: argparse.Namespace) -> int:
    _fleet.push_grouping(args.push_group)  # bad input before any cluster is read
    result = run_child("plan", args.inventory, args.limit)
    now = time.time()
    doc = report.drift_report(result, now, args.detailed_exitcode)
    return _fleet.finish(args, doc, report.render_drift, lambda: report.drift_metrics(doc, now), JOB)
