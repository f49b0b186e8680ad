"""Revert every timed toggle past its expiry (e.g. --enforce-eager), restoring the exact prior argv, nothing else.

Crash-safe: the expiry and the prior argv live on the Deployment, so a toggle set by a process that died is
reverted all the same. Runs the deploys' own ``vllm.revert_expired_toggles`` operation (guarded write, GitOps
stance of the policy). Exit 0 done (also when nothing was due), 1 a host failed, 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from vllm_remedy.drift import report
from vllm_remedy.drift.child import run_child
from vllm_remedy.metrics import push, write_textfile

NAME = "expire"
HELP = "revert every timed toggle past its expiry (exact prior argv), nothing else"
JOB = "vllm-remedy-expire"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-i", "--inventory", required=True, metavar="INVENTORY", help="pyinfra inventory file")
    parser.add_argument("--limit", action="append", default=[], metavar="PATTERN",
                        help="only hosts in this group or matching this pattern (repeatable)")
    parser.add_argument("-o", "--output", choices=("text", "json"), default="text")
    parser.add_argument("--metrics-file", type=Path, metavar="PATH", help="write Prometheus metrics (textfile)")
    parser.add_argument("--pushgateway", metavar="URL",
                        help="push the metrics to this Pushgateway (job vllm-remedy-expire)")


def run(args: argparse.Namespace) -> int:
    result = run_child("expire", args.inventory, args.limit)
    doc = report.expire_report(result, time.time())
    if args.output == "json":
        print(json.dumps(doc, indent=2, ensure_ascii=False))
    else:
        sys.stdout.write(report.render_expire(doc))
    for h in doc["hosts"]:
        if h["status"] == report.ERROR:
            print(f"vllm-remedy: error: {h['host']}: {h['error']}", file=sys.stderr)
    if args.metrics_file or args.pushgateway:
        metrics = report.expire_metrics(doc)
        if args.metrics_file:
            write_textfile(args.metrics_file, metrics)
        if args.pushgateway:
            push(args.pushgateway, metrics, job=JOB)
    return int(doc["status"]["exitCode"])
