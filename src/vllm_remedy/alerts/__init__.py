"""Prometheus alerting rules rendered from policies (runbook: "alert on OOM restarts and KV usage > 90 %").

Pure: callers load the policies and write the output. ``vllm-remedy alerts`` is the command-line face.
"""

from __future__ import annotations

from .promql import PodScope, quote
from .render import DEFAULT_RUNBOOK_URL, FOOTPRINT_GROUP, RenderOptions, dump, prometheus_rule, rule_groups
from .rules import EXPIRY_GRACE, RESTART_WINDOW, STALE_AFTER, STEPS, AlertRule, footprint_rules, policy_rules

__all__ = [
    "DEFAULT_RUNBOOK_URL",
    "EXPIRY_GRACE",
    "FOOTPRINT_GROUP",
    "RESTART_WINDOW",
    "STALE_AFTER",
    "STEPS",
    "AlertRule",
    "PodScope",
    "RenderOptions",
    "dump",
    "footprint_rules",
    "policy_rules",
    "prometheus_rule",
    "quote",
    "rule_groups",
]
