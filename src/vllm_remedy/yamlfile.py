"""Reading a user's YAML file (a manifest, a game-day scenario, a rehearsal seed) with one-line errors naming it.

Input is bounded before it is built: a few hundred bytes of nested aliases ("billion laughs") expand to
billions of nodes, and every walk over the data would then hang. Both PyYAML and ruamel.yaml nodes are
checked here (same shape: ``.value`` is a list of nodes, or of (key, value) pairs for mappings).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from vllm_remedy.errors import UserError

MAX_CHARS = 16 * 1024 * 1024
# Nodes that aliases add beyond those written out; real `<<: *defaults` reuse stays far below this.
MAX_ALIAS_EXPANSION = 100_000


def check_size(chars: int, source: object) -> None:
    """Refuse input of more than MAX_CHARS characters, before any parse."""
    if chars > MAX_CHARS:
        raise UserError(f"{source}: refused: larger than {MAX_CHARS // (1024 * 1024)} MiB")


def _children(node: Any) -> list[Any]:
    value = getattr(node, "value", None)
    if not isinstance(value, list):
        return []
    return [n for item in value for n in (item if isinstance(item, tuple) else (item,))]


def check_aliases(node: Any, source: object) -> None:
    """Refuse a composed document whose aliases expand past MAX_ALIAS_EXPANSION nodes, or refer to themselves.

    Subtree sizes are memoised per node, so the check costs the document as written, not as expanded.
    """
    sizes: dict[int, int] = {}
    open_: set[int] = set()
    stack: list[tuple[Any, bool]] = [(node, False)]
    while stack:
        n, done = stack.pop()
        kids = _children(n)
        if done:
            open_.discard(id(n))
            sizes[id(n)] = 1 + sum(sizes[id(k)] for k in kids)
            if sizes[id(n)] - len(sizes) > MAX_ALIAS_EXPANSION:
                break
            continue
        if id(n) in sizes:
            continue
        if id(n) in open_:
            raise UserError(f"{source}: refused: a YAML alias refers to its own anchor (recursive document)")
        open_.add(id(n))
        stack.append((n, True))
        stack.extend((k, False) for k in kids if id(k) not in sizes)
    if max(sizes.values(), default=0) - len(sizes) > MAX_ALIAS_EXPANSION:
        raise UserError(f"{source}: refused: YAML aliases expand to more than {MAX_ALIAS_EXPANSION} extra nodes "
                        "(alias bomb?)")


def read_yaml(path: Path, what: str) -> Any:
    """The parsed document; UserError ``<path>: cannot read <what>: ...`` or ``<path>: not valid YAML: ...``."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise UserError(f"{path}: cannot read {what}: {exc.strerror}") from None
    check_size(len(text), path)
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        check_aliases(node, path)
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        raise UserError(f"{path}: not valid YAML: {str(exc).splitlines()[0]}") from None
    finally:
        loader.dispose()
