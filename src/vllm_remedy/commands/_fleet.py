"""What the scheduled fleet commands (drift, expire) share: their arguments and how they finish.

Both run the deploys' operations over an inventory in a child process and report per host, usually from a
CronJob; so they must read and end alike — the same -i/--limit/-o, the same metrics sinks, one stderr line per
host that could not be handled, the report's exit code.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from vllm_remedy.drift.report import ERROR
from vllm_remedy.envelope import dumps
from vllm_remedy.errors import UserError
from vllm_remedy.metrics import Metrics, push, write_textfile


def add_inventory_arguments(parser: argparse.ArgumentParser) -> None:
    """``-i INVENTORY``, repeatable ``--limit`` (pyinfra's meaning) and ``-o text|json``."""
    parser.add_argument("-i", "--inventory", required=True, metavar="INVENTORY", help="pyinfra inventory file")
    parser.add_argument("--limit", action="append", default=[], metavar="PATTERN",
                        help="only hosts in this group or matching this pattern (repeatable), as pyinfra's --limit")
    parser.add_argument("-o", "--output", choices=("text", "json"), default="text")


def add_metrics_arguments(parser: argparse.ArgumentParser, job: str) -> None:
    """``--metrics-file`` (node-exporter textfile) and ``--pushgateway URL`` (pushed under ``job``)."""
    parser.add_argument("--metrics-file", type=Path, metavar="PATH",
                        help="write Prometheus metrics for node-exporter's textfile collector")
    parser.add_argument("--pushgateway", metavar="URL", help=f"push the metrics to this Pushgateway (job {job})")
    parser.add_argument("--push-group", action="append", default=[], metavar="LABEL=VALUE",
                        help="Pushgateway grouping key besides the job (repeatable): one group per cluster or shard, "
                             "so runs pushing to one Pushgateway do not replace each other's metrics")


def push_grouping(values: list[str]) -> dict[str, str]:
    """``--push-group`` values as a grouping key; a malformed one is bad input (one line)."""
    grouping: dict[str, str] = {}
    for value in values:
        label, sep, text = value.partition("=")
        if not sep or not re.fullmatch(r"[a-zA-Z_][a-zA-Z0-9_]*", label) or label == "job" or not text:
            raise UserError(f"--push-group {value!r}: expected LABEL=VALUE (a Prometheus label name other than job)")
        grouping[label] = text
    return grouping


def finish(args: argparse.Namespace, doc: Mapping[str, Any], render: Callable[[Mapping[str, Any]], str],
           metrics: Callable[[], Metrics], job: str) -> int:
    """Print the report (json or ``render``), one error line per failed host, write/push the metrics; the
    report's exit code."""
    if args.output == "json":
        print(dumps(doc, ensure_ascii=False))
    else:
        sys.stdout.write(render(doc))
    for h in doc["hosts"]:
        if h["status"] == ERROR:
            print(f"vllm-remedy: error: {h['host']}: {h['error']}", file=sys.stderr)
    if args.metrics_file or args.pushgateway:
        failed = {h["host"] for h in doc["hosts"] if h["status"] == ERROR}
        if args.metrics_file:
            sample = metrics()
            previous = Path(args.metrics_file)
            if failed and previous.is_file():
                sample.carry_unchecked(previous.read_text(encoding="utf-8", errors="replace"), failed)
            write_textfile(args.metrics_file, sample)
        if args.pushgateway:
            push(args.pushgateway, metrics(), job=job, grouping=push_grouping(args.push_group), unchecked=failed)
    return int(doc["status"]["exitCode"])
