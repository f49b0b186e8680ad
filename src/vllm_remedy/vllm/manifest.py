"""Walk Kubernetes YAML documents and yield every pod spec in them, with a path for messages and diffs.

Pod specs hide at different depths (Deployment `spec.template.spec`, LeaderWorkerSet leader and worker
templates, RayService groups, KServe runtimes' `spec`), so instead of a per-kind table we look for the
shape of a pod spec — a `containers` list of mappings — anywhere in the document.

YAML is read with ruamel.yaml so the same parse also yields node positions (``compose``), which
`manifest_text` needs to rewrite argv in place of the user's text. Resolution follows YAML 1.1 (`yes` is a
boolean), as Kubernetes' own YAML decoder does, so a document means here what it means to the API server.
"""

from __future__ import annotations

import io
import warnings
from collections.abc import Iterator
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.nodes import Node, ScalarNode

from vllm_remedy import yamlfile
from vllm_remedy.errors import UserError


def _loader() -> YAML:
    """A fresh safe, pure-Python YAML 1.1 loader (pure: only it records character offsets on every node)."""
    yaml = YAML(typ="safe", pure=True)
    yaml.version = (1, 1)
    return yaml


def compose(text: str, source: str) -> list[tuple[Node, Any]]:
    """(node, data) of every non-empty document; nodes carry start/end character offsets into ``text``.

    A syntax error names ``source`` and the line, as a UserError; so do oversized input and alias bombs.
    """
    yamlfile.check_text(text, source)
    constructor, parser = _loader().get_constructor_parser(text)
    yamlfile.EventLimits(source).watch(parser)
    composer = constructor.composer
    out: list[tuple[Node, Any]] = []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # YAML 1.1 float-spelling advice is not the user's problem
            while composer.check_node():
                node = composer.get_node()
                yamlfile.check_aliases(node, source)  # before building: an alias bomb hangs every walk
                data = constructor.construct_document(node)
                if not (isinstance(node, ScalarNode) and data is None):
                    out.append((node, data))
    except YAMLError as exc:
        mark = exc.problem_mark if isinstance(exc, MarkedYAMLError) else None
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = (exc.problem if isinstance(exc, MarkedYAMLError) else None) or str(exc).strip().splitlines()[0]
        raise UserError(f"{source}: not valid YAML{where}: {problem}") from None
    return out


def load_documents(text: str, source: str) -> list[Any]:
    """All non-empty YAML documents of ``text`` as plain dicts/lists/scalars; a syntax error names ``source``."""
    return [data for _node, data in compose(text, source)]


def is_pod_spec(node: Any) -> bool:
    """A mapping whose `containers` is a non-empty list of mappings: the shape every pod template shares."""
    items = node.get("containers") if isinstance(node, dict) else None
    return isinstance(items, list) and bool(items) and all(isinstance(c, dict) for c in items)


def _walk(node: Any, path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    if is_pod_spec(node):
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

    Works on any plain dict (API JSON included). Paths read like kubectl's: ``spec.template.spec`` for a
    Deployment, ``spec`` for a Pod, ``spec.leaderWorkerTemplate.workerTemplate.spec`` for a LeaderWorkerSet
    worker, ``""`` for a bare PodSpec.
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


def _str_representer(representer: Any, data: str) -> Any:
    """Block style for multi-line strings so generated scripts stay readable."""
    style = "|" if "\n" in data else None
    return representer.represent_scalar("tag:yaml.org,2002:str", data, style=style)


def dump_documents(docs: list[Any]) -> str:
    """Plain documents to multi-document YAML in the same order, keys in their given order.

    For generating YAML from data (API objects, new manifests). To change a user's file, use
    `manifest_text.ManifestText`, which keeps every byte the edit does not need to touch.
    """
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False  # before the representer exists: it copies the setting when created
    yaml.allow_unicode = True
    yaml.representer.sort_base_mapping_type_on_output = False
    yaml.representer.add_representer(str, _str_representer)
    yaml.width = 100_000
    yaml.explicit_start = len(docs) > 1
    out = io.StringIO()
    yaml.dump_all(docs, out)
    return out.getvalue()
