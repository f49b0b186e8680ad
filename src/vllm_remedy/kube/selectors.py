"""Label selectors: the query string kubectl sends and the matching the API server does, over plain dicts.

kubectl lists ReplicaSets and pods with the Deployment's ``spec.selector`` rendered as a
``labelSelector`` string; matching the same rules locally lets pure code work on fixtures.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vllm_remedy.errors import UserError


def selector_string(selector: Mapping[str, Any] | None) -> str:
    """``metav1.LabelSelectorAsSelector(...).String()``: requirements sorted by key, comma-joined."""
    if not selector:
        return ""
    parts: list[tuple[str, str]] = []
    for key, value in (selector.get("matchLabels") or {}).items():
        parts.append((key, f"{key}={value}"))
    for expr in selector.get("matchExpressions") or []:
        key, op = expr.get("key", ""), expr.get("operator", "")
        values = sorted(expr.get("values") or [])
        if op == "In":
            parts.append((key, f"{key} in ({','.join(values)})"))
        elif op == "NotIn":
            parts.append((key, f"{key} notin ({','.join(values)})"))
        elif op == "Exists":
            parts.append((key, key))
        elif op == "DoesNotExist":
            parts.append((key, f"!{key}"))
        else:
            raise UserError(f"spec.selector.matchExpressions: unknown operator {op!r} for key {key!r}")
    return ",".join(text for _, text in sorted(parts, key=lambda p: p[0]))


def matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str] | None) -> bool:
    """Whether ``labels`` satisfy a LabelSelector dict; an empty selector matches everything (as in apps/v1)."""
    labels = labels or {}
    if not selector:
        return True
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        present = key in labels
        if (op == "In" and not (present and labels[key] in values)) or (
                op == "NotIn" and present and labels[key] in values) or (
                op == "Exists" and not present) or (op == "DoesNotExist" and present):
            return False
    return True
