"""Policies → a PrometheusRule (monitoring.coreos.com/v1) or a plain Prometheus rule file. Pure: no files read.

One group per policy, named after it, so a rule's origin is visible in Prometheus' UI and two policies' alerts
never share evaluation state; one more group watches vllm-remedy's own scheduled check.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from vllm_remedy.policy import Policy

from .rules import footprint_rules, policy_rules

#: Where the annotations' runbook_url points unless the user names their own copy of the runbook.
DEFAULT_RUNBOOK_URL = "https://github.com/vllm-remedy/vllm-remedy/blob/main/docs/runbook.md"
GROUP_PREFIX = "vllm-remedy."
FOOTPRINT_GROUP = "vllm-remedy.footprint"


@dataclass(frozen=True)
class RenderOptions:
    """What the PrometheusRule object is called and where its runbook links point."""

    name: str = "vllm-remedy"
    namespace: str | None = None
    #: Labels the Prometheus operator's ruleSelector looks for (e.g. release: kube-prometheus-stack).
    labels: Mapping[str, str] = field(default_factory=dict)
    runbook_url: str = DEFAULT_RUNBOOK_URL


def rule_groups(policies: Mapping[str, Policy], runbook_url: str = DEFAULT_RUNBOOK_URL) -> list[dict[str, Any]]:
    """Prometheus rule groups: one per policy (in name order), then the footprint group."""
    groups = [{"name": GROUP_PREFIX + name,
               "rules": [r.to_dict(runbook_url, name) for r in policy_rules(policy)]}
              for name, policy in sorted(policies.items())]
    groups.append({"name": FOOTPRINT_GROUP, "rules": [r.to_dict(runbook_url, None) for r in footprint_rules()]})
    return groups


def prometheus_rule(policies: Mapping[str, Policy], options: RenderOptions | None = None) -> dict[str, Any]:
    """The PrometheusRule custom resource the Prometheus operator loads."""
    options = options or RenderOptions()
    metadata: dict[str, Any] = {"name": options.name}
    if options.namespace:
        metadata["namespace"] = options.namespace
    metadata["labels"] = {"app.kubernetes.io/name": "vllm-remedy", "app.kubernetes.io/component": "alerts",
                          **options.labels}
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule", "metadata": metadata,
            "spec": {"groups": rule_groups(policies, options.runbook_url)}}


def dump(obj: Mapping[str, Any], output: str) -> str:
    """``yaml`` (block style, keys in written order, long exprs unwrapped) or ``json``."""
    if output == "json":
        return json.dumps(obj, indent=2) + "\n"
    return yaml.safe_dump(dict(obj), sort_keys=False, width=1_000_000, allow_unicode=True)
