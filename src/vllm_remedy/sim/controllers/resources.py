"""Kubernetes resource quantities ("500m", "16Gi", "1") and per-pod resource requests."""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": 1e-9, "u": 1e-6, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}


def parse_quantity(value: Any) -> float:
    """The numeric value of a quantity; raises ValueError on nonsense."""
    if isinstance(value, (int, float)):
        return float(value)
    text = str(value).strip()
    for suffix, factor in _BINARY.items():
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * factor
    if text and text[-1] in _DECIMAL and not text[-1].isdigit():
        return float(text[:-1]) * _DECIMAL[text[-1]]
    return float(text)


def pod_requests(pod: Obj) -> dict[str, float]:
    """Effective requests: the sum over containers, at least the largest init container; limits
    stand in for missing requests (the apiserver defaults them so for pods)."""
    spec = pod.get("spec") or {}

    def of(container: Obj) -> dict[str, float]:
        res = container.get("resources") or {}
        merged = {**(res.get("limits") or {}), **(res.get("requests") or {})}
        out: dict[str, float] = {}
        for name, qty in merged.items():
            try:
                out[name] = parse_quantity(qty)
            except ValueError:
                continue
        return out

    total: dict[str, float] = {}
    for container in spec.get("containers") or []:
        for name, qty in of(container).items():
            total[name] = total.get(name, 0.0) + qty
    for container in spec.get("initContainers") or []:
        for name, qty in of(container).items():
            total[name] = max(total.get(name, 0.0), qty)
    return total
