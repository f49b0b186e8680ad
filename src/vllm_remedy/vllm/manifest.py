"""Walk Kubernetes YAML documents and yield every pod spec in them, with a path for messages and diffs.

Pod specs hide at different depths (Deployment `spec.template.spec`, LeaderWorkerSet leader and worker
templates, RayService groups, KServe runtimes' `spec`), so instead of a per-kind table we look for the
shape of a pod spec — a `containers` list of mappings — anywhere in the document.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import yaml

from vllm_remedy.errors import UserError


def load_documents(text: str, source: str) -> list[Any]:
    """All non-empty YAML documents of ``text``; a syntax error names ``source`` and the line."""
    try:
        docs = list(yaml.safe_load_all(text))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise UserError(f"{source}: not valid YAML{where}: {problem}") from None
    return [d for d in docs if d is not None]


def _is_pod_spec(node: Any) -> bool:
    items = node.get("containers") if isinstance(node, dict) else None
    return isinstance(items, list) and bool(items) and all(isinstance(c, dict) for c in items)


def _walk(node: Any, path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    if _is_pod_spec(node):
        yield path, node
        return
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _walk(value, f"{path}.{key}" if path else str(key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _walk(value, f"{path}[{i}]")


def pod_specs(doc: Any) -> list[tuple[str, dict[str, Any]]]:
    """(path, pod spec) pairs in document order; the dicts are live, so editing them edits ``doc``.

    Paths read like kubectl's: ``spec.template.spec`` for a Deployment, ``spec`` for a Pod,
    ``spec.leaderWorkerTemplate.workerTemplate.spec`` for a LeaderWorkerSet worker, ``""`` for a bare PodSpec.
    """
    return list(_walk(doc, ""))


def describe(doc: Any) -> str:
    """`Kind/name` of a document for messages (``document`` when it has neither)."""
    if not isinstance(doc, dict):
        return "document"
    kind = doc.get("kind") or "document"
    meta = doc.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    return f"{kind}/{name}" if name else str(kind)


class _Dumper(yaml.SafeDumper):
    """Block style for multi-line strings so edited scripts stay readable."""


def _str_representer(dumper: yaml.SafeDumper, data: str) -> yaml.Node:
    if "\n" in data:
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", data)


_Dumper.add_representer(str, _str_representer)


def dump_documents(docs: list[Any]) -> str:
    """Documents back to multi-document YAML in the same order, keys in their original order."""
    return yaml.dump_all(docs, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100_000,
                         default_flow_style=False, explicit_start=len(docs) > 1)
