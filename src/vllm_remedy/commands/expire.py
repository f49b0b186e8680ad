"""Revert every timed toggle past its expiry (e.g. --enforce-eager), nothing else.

Crash-safe: the expiry and the prior argv live on the workload (a Deployment, StatefulSet or LeaderWorkerSet), so
a toggle set by a process that died is reverted all the same. Runs the revert the deploys run first for that kind
(`workload.revert_expired_toggles`, on a LeaderWorkerSet `lws_eager.revert_expired_toggles`: guarded write, GitOps
stance of the policy): the exact prior argv comes back only where it is the running (leader) container without the
toggle's flag, token for token, else just the flag comes off; an expiry later than the policy's
enforce_eager.max_duration from now is not ours and counts as expired; a revert the memory model predicts
will not start is not written.

Exit codes:
  0 done (also when nothing was due)
  1 a host failed (its revert refused, e.g. predicted not to start without the toggle)
  2 bad input (a missing inventory, or host data naming a missing kubeconfig or policy file)

Examples:
  vllm-remedy expire -i inventories/local.py
  vllm-remedy expire -i inventories/prod.py --limit llama_8b -o json --pushgateway http://pushgateway:9091
"""

from __future__ import annotations

import argparse
import time

from vllm_remedy.commands import _fleet
from vllm_remedy.drift import report
from vllm_remedy.drift.child import run_child

NAME = "expire"
ORDER = 70
HELP = "revert every timed toggle past its expiry (exact prior argv), nothing else"
JOB = "vllm-remedy-expire"


def configure(parser: argparse.ArgumentParser) -> None:
    _fleet.add_inventory_arguments(parser)
    _fleet.add_metrics_arguments(parser, JOB)


def run(args: argparse.Namespace) -> int:
    _fleet.push_grouping(args.push_group)  # bad input before anything is reverted
    result = run_child("expire", args.inventory, args.limit)
    doc = report.expire_report(result, time.time())
    return _fleet.finish(args, doc, report.render_expire, lambda: report.expire_metrics(doc), JOB)
