"""Check every host of an inventory against its policy without changing anything (scheduled drift check).

Per host: explicit --max-model-len, flags within bounds, an allowed known-good unit (image + model revision +
flags), the GPU pinned as the policy says, no --enforce-eager toggle past its expiry, predicted maximum
concurrency >= the policy's peak — and the fix the deploys would make (their operations, planned: the diff and
the prediction). Exit 0 no drift, 1 drift, 2 error; --detailed-exitcode: 0 / 2 drift / 1 error. A host that
could not be checked is an error, never "no drift".
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from vllm_remedy.drift import report
from vllm_remedy.drift.child import run_child
from vllm_remedy.errors import UserError
from vllm_remedy.metrics import push, write_textfile

NAME = "drift"
HELP = "check every host against its policy, show the fix; exit 0 none / 1 drift / 2 error"
JOB = "vllm-remedy-drift"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-i", "--inventory", required=True, metavar="INVENTORY", help="pyinfra inventory file")
    parser.add_argument("--limit", action="append", default=[], metavar="PATTERN",
                        help="only hosts in this group or matching this pattern (repeatable), as pyinfra's --limit")
    parser.add_argument("-o", "--output", choices=("text", "json"), default="text")
    parser.add_argument("--detailed-exitcode", action="store_true",
                        help="Terraform/helm-diff exit codes: 0 no drift, 2 drift, 1 error")
    parser.add_argument("--metrics-file", type=Path, metavar="PATH",
                        help="write Prometheus metrics for node-exporter's textfile collector")
    parser.add_argument("--pushgateway", metavar="URL",
                        help="push the metrics to this Pushgateway (job vllm-remedy-drift)")


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
    result = run_child("plan", args.inventory, args.limit)
    now = time.time()
    doc = report.drift_report(result, now, args.detailed_exitcode)
    if args.output == "json":
        print(json.dumps(doc, indent=2, ensure_ascii=False))
    else:
        sys.stdout.write(report.render_drift(doc))
    for h in doc["hosts"]:
        if h["status"] == report.ERROR:
            print(f"vllm-remedy: error: {h['host']}: {h['error']}", file=sys.stderr)
    if args.metrics_file or args.pushgateway:
        metrics = report.drift_metrics(doc, now)
        if args.metrics_file:
            write_textfile(args.metrics_file, metrics)
        if args.pushgateway:
            push(args.pushgateway, metrics, job=JOB)
    return int(doc["status"]["exitCode"])
