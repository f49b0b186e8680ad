"""Label selectors: the query string kubectl sends and the matching the API server does, over plain dicts.

kubectl lists ReplicaSets and pods with the Deployment's ``spec.selector`` rendered as a
``labelSelector`` string; matching the same rules locally lets pure code work on fixtures.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from vllm_remedy.errors import UserError

_SET = re.compile(r"^(?P<key>[^\s!=(),]+)\s+(?P<op>in|notin)\s*\((?P<values>[^()]*)\)$")


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


def parse_selector(text: str) -> dict[str, Any]:
    """The LabelSelector a ``labelSelector`` query string stands for (``selector_string``'s inverse, plus ``!=``
    and ``==``), so a list read once per namespace can answer every Deployment's selector locally."""
    requirements: list[dict[str, Any]] = []
    for part in _split_requirements(text):
        words = part.split()
        listed = _SET.match(part)
        if listed:
            values = [v.strip() for v in listed["values"].split(",") if v.strip()]
            requirements.append({"key": listed["key"], "operator": "In" if listed["op"] == "in" else "NotIn",
                                 "values": values})
        elif "!=" in part:
            key, _, value = part.partition("!=")
            requirements.append({"key": key.strip(), "operator": "NotIn", "values": [value.strip()]})
        elif "=" in part:
            key, _, value = part.replace("==", "=", 1).partition("=")
            requirements.append({"key": key.strip(), "operator": "In", "values": [value.strip()]})
        elif part.startswith("!") and len(words) == 1:
            requirements.append({"key": part[1:], "operator": "DoesNotExist"})
        elif len(words) == 1:
            requirements.append({"key": part, "operator": "Exists"})
        else:
            raise UserError(f"label selector {text!r}: cannot read {part!r}")
    return {"matchExpressions": requirements} if requirements else {}


def _split_requirements(text: str) -> list[str]:
    """Comma-separated requirements, commas inside ``in (a,b)`` kept."""
    parts, depth, current = [], 0, ""
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += char
    parts.append(current.strip())
    return [p for p in parts if p]
