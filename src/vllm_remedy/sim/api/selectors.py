"""Label and field selectors with the apiserver's grammar and its 400s for what it cannot parse.

kubectl sends ``labelSelector`` for ``-l`` and for every ``rollout``/``logs deploy/X`` lookup, and
``fieldSelector=metadata.name=X`` for ``rollout status``; a selector that silently matched
everything would make those commands act on the wrong objects.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from vllm_remedy.sim.store import ApiError

Obj = dict[str, Any]
Matcher = Callable[[Obj], bool]

# Field selectors each resource supports beyond metadata.name / metadata.namespace (from the apiserver's
# field label conversion functions); anything else is a 400, as there.
FIELDS: dict[str, tuple[str, ...]] = {
    "pods": ("spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
             "status.phase", "status.podIP", "status.nominatedNodeName"),
    "events": ("involvedObject.kind", "involvedObject.namespace", "involvedObject.name", "involvedObject.uid",
               "involvedObject.apiVersion", "involvedObject.resourceVersion", "involvedObject.fieldPath",
               "reason", "reportingComponent", "source", "type"),
    "replicasets.apps": ("status.replicas",),
    "nodes": ("spec.unschedulable",),
    "namespaces": ("status.phase",),
}

_KEY = r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?"
_VALUE = r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?"
_KEY_RE = re.compile(_KEY + r"$")
_VALUE_RE = re.compile(_VALUE + r"$")


def _bad(kind: str, text: str, why: str) -> ApiError:
    return ApiError(400, "BadRequest", f"unable to parse requirement: {kind} {text!r}: {why}")


def _split_terms(text: str) -> list[str]:
    """Split on commas that are not inside ``in (...)`` value sets."""
    terms, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            terms.append(text[start:i])
            start = i + 1
    terms.append(text[start:])
    return [t.strip() for t in terms if t.strip()]


def _check_key(key: str, term: str) -> str:
    if not _KEY_RE.match(key) or len(key.rpartition("/")[2]) > 63:
        raise _bad("label selector", term, f"invalid label key {key!r}")
    return key


def _check_value(value: str, term: str) -> str:
    if not _VALUE_RE.match(value) or len(value) > 63:
        raise _bad("label selector", term, f"invalid label value {value!r}")
    return value


def _label_term(term: str) -> Matcher:
    set_match = re.fullmatch(r"(\S+)\s+(in|notin)\s*\((.*)\)", term)
    if set_match:
        key = _check_key(set_match.group(1), term)
        values = {_check_value(v.strip(), term) for v in set_match.group(3).split(",")}
        if set_match.group(2) == "in":
            return lambda labels: labels.get(key) in values
        return lambda labels: labels.get(key) not in values
    for op in ("!=", "==", "="):
        if op in term:
            key, _, value = term.partition(op)
            key, value = _check_key(key.strip(), term), _check_value(value.strip(), term)
            if op == "!=":
                return lambda labels: labels.get(key) != value
            return lambda labels: labels.get(key) == value
    if term.startswith("!"):
        key = _check_key(term[1:].strip(), term)
        return lambda labels: key not in labels
    if re.search(r"[\s()<>]", term):
        raise _bad("label selector", term, "found unexpected token")
    key = _check_key(term, term)
    return lambda labels: key in labels


def label_matcher(text: str | None) -> Matcher | None:
    """Parse a ``labelSelector``; None means "everything"."""
    if not text or not text.strip():
        return None
    terms = [_label_term(t) for t in _split_terms(text)]
    return lambda obj: all(t(obj.get("metadata", {}).get("labels") or {}) for t in terms)


def _field_value(obj: Obj, path: str) -> str:
    node: Any = obj
    for part in path.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    if path == "source" and isinstance(node, dict):
        node = node.get("component")
    if node is None:
        return ""
    if isinstance(node, bool):
        return "true" if node else "false"
    return str(node)


def field_matcher(text: str | None, resource_key: str) -> Matcher | None:
    """Parse a ``fieldSelector`` for ``resource_key``; unsupported field labels are a 400 as in kube."""
    if not text or not text.strip():
        return None
    allowed = {"metadata.name", "metadata.namespace", *FIELDS.get(resource_key, ())}
    checks: list[tuple[str, bool, str]] = []
    for term in _split_terms(text):
        for op in ("!=", "==", "="):
            if op in term:
                field, _, value = term.partition(op)
                field = field.strip()
                break
        else:
            raise ApiError(400, "BadRequest", f"invalid selector: '{text}'; can't understand '{term}'")
        if field not in allowed:
            raise ApiError(400, "BadRequest", f'field label not supported: {field}')
        checks.append((field, op == "!=", value.strip()))
    return lambda obj: all((_field_value(obj, f) == v) != negate for f, negate, v in checks)


def format_label_selector(selector: Obj | None) -> str:
    """A LabelSelector as kubectl's Selector column and ``rollout`` commands render it."""
    if not selector:
        return "<none>"
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key", ""), expr.get("operator", ""), expr.get("values") or []
        if op == "In":
            parts.append(f"{key} in ({','.join(sorted(values))})")
        elif op == "NotIn":
            parts.append(f"{key} notin ({','.join(sorted(values))})")
        elif op == "Exists":
            parts.append(key)
        elif op == "DoesNotExist":
            parts.append(f"!{key}")
    return ",".join(parts) if parts else "<none>"
