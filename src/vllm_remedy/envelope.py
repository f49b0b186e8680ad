"""The envelope of every ``-o json`` document: ``apiVersion`` and ``kind`` first, then the command's own keys.

README promises versioned machine output; one helper keeps every command's envelope alike, so a script can
check ``apiVersion`` before it trusts the shape and dispatch on ``kind``. No imports from the package: any
layer that builds a report (commands, drift) may use it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

API_VERSION = "vllm-remedy.io/v1alpha1"


def envelope(kind: str, body: Mapping[str, Any]) -> dict[str, Any]:
    """``body`` under ``apiVersion``/``kind``; its other keys kept as they were, so existing readers still work."""
    if not kind:
        raise ValueError("envelope: kind must name the document")
    return {"apiVersion": API_VERSION, "kind": kind,
            **{k: v for k, v in body.items() if k not in ("apiVersion", "kind")}}


def listing(kind: str, items: Iterable[Any]) -> dict[str, Any]:
    """A list as a document (kubectl's ``kind: List`` shape, ``items``): a bare array has no room for a version."""
    return envelope(kind, {"items": list(items)})


def dumps(doc: Mapping[str, Any], indent: int | None = 2, ensure_ascii: bool = True) -> str:
    """The document as ``-o json`` prints it; refuses one built without ``envelope``/``listing``."""
    if doc.get("apiVersion") != API_VERSION or not doc.get("kind"):
        raise ValueError("dumps: build the document with envelope() or listing()")
    return json.dumps(doc, indent=indent, ensure_ascii=ensure_ascii)
