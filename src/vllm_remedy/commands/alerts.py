"""Render a PrometheusRule from policies, for the Prometheus Operator (or plain rule files for promtool).

A directory renders every policy in it except bases that another policy there extends (default.yaml):
their thresholds reach the alerts through the policies that extend them, and a base with an empty target
would page twice for every pod. Name a base file with -p to render it anyway. `-o json` prints the same
PrometheusRule as JSON: a Kubernetes object, so its apiVersion is monitoring.coreos.com/v1.

Examples:
  vllm-remedy alerts -p policies/ > prometheusrule.yaml
  vllm-remedy alerts -p policies/ -n monitoring --label release=kube-prometheus-stack | kubectl apply -f -
  vllm-remedy alerts -p policies/llama-8b.yaml -o rules > vllm-remedy.rules.yaml
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from vllm_remedy.alerts import DEFAULT_RUNBOOK_URL, RenderOptions, dump, prometheus_rule, rule_groups
from vllm_remedy.errors import UserError
from vllm_remedy.policy import Policy, load_policies, load_policy
from vllm_remedy.policy.loader import SUFFIXES, read_mapping

NAME = "alerts"
ORDER = 80
HELP = "render Prometheus alerting rules (a PrometheusRule) from policies"


def configure(parser: argparse.ArgumentParser) -> None:
    """Policies in, one YAML/JSON document out on stdout."""
    parser.add_argument("-p", "--policies", action="append", required=True, metavar="PATH",
                        help="policy directory or file (repeatable)")
    parser.add_argument("-o", "--output", choices=("yaml", "json", "rules"), default="yaml",
                        help="yaml/json: a PrometheusRule; rules: a plain Prometheus rule file (promtool, "
                             "rule_files)")
    parser.add_argument("--name", default="vllm-remedy", help="metadata.name of the PrometheusRule")
    parser.add_argument("-n", "--namespace", help="metadata.namespace of the PrometheusRule")
    parser.add_argument("--label", action="append", default=[], metavar="KEY=VALUE",
                        help="metadata label, e.g. release=kube-prometheus-stack for the operator's ruleSelector")
    parser.add_argument("--runbook-url", default=DEFAULT_RUNBOOK_URL, metavar="URL",
                        help="your copy of the runbook; alerts link to its step anchors")


def run(args: argparse.Namespace) -> int:
    """Load, render, print; bad policies or options are one-line errors before anything is printed."""
    policies = select_policies([Path(p) for p in args.policies])
    if not policies:
        raise UserError(f"{', '.join(args.policies)}: no policies to render (expected *.yaml policy files)")
    if args.output == "rules":
        print(dump({"groups": rule_groups(policies, args.runbook_url)}, "yaml"), end="")
        return 0
    options = RenderOptions(args.name, args.namespace, _labels(args.label), args.runbook_url)
    print(dump(prometheus_rule(policies, options), args.output), end="")
    return 0


def select_policies(paths: list[Path]) -> dict[str, Policy]:
    """Policies by name: files as given, directories without their bases. A name given twice is an error."""
    out: dict[str, Policy] = {}
    origin: dict[str, Path] = {}
    for path in paths:
        if path.is_dir():
            found = load_policies(path)
            for base, child in sorted(_bases(path).items()):
                print(f"vllm-remedy: {path / base}: a base of {child}, no group of its own", file=sys.stderr)
                found.pop(base, None)
            items = {name: (policy, path / name) for name, policy in found.items()}
        else:
            items = {path.stem: (load_policy(path), path)}
        for name, (policy, where) in items.items():
            if name in out:
                raise UserError(f"{where}: policy {name!r} is also given as {origin[name]}")
            out[name], origin[name] = policy, where
    return out


def _bases(directory: Path) -> dict[str, str]:
    """Stem of every policy another policy in ``directory`` extends → one policy that extends it."""
    bases: dict[str, str] = {}
    for path in sorted(p for p in directory.iterdir() if p.suffix in SUFFIXES and not p.name.startswith(".")):
        parent = read_mapping(path).get("extends")
        if isinstance(parent, str) and parent.strip():
            bases.setdefault(Path(parent.strip()).stem, path.stem)
    return bases


def _labels(pairs: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UserError(f"--label {pair}: expected KEY=VALUE")
        out[key] = value
    return out
