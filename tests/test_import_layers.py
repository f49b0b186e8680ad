"""The package's modules form a layered DAG: no import circles, and lower layers never reach up.

Why a test and not a linter: circles were being dodged with function-local and
``TYPE_CHECKING`` imports, which hide the circle from Python but not from a reader.
So every ``import`` counts wherever it sits (module level, inside a function, under
``if TYPE_CHECKING``).  The graph is read from source with ``ast``; nothing is imported.

Packages: ``import a.b`` and ``from a.b import name`` are edges to ``a.b``'s ``__init__``
(whose own imports continue the path); ``from a.b import c`` where ``a.b.c`` is a module
is an edge to ``a.b.c``.  Importing ``a.b.c`` also runs ``a/__init__`` and ``a/b/__init__`` first,
so those are edges too — except to the importer's own enclosing packages, whose ``__init__`` is
already running when the importer is (counting them would make every package that re-exports a
submodule a "circle" of itself).  A circle through a package ``__init__`` is a real one: the
module that closes it finds a partially initialised package.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

ROOT = "vllm_remedy"
SRC = Path(__file__).resolve().parents[1] / "src" / ROOT


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(SRC.rglob("*.py"))}


def _is_package(path: Path) -> bool:
    return path.name == "__init__.py"


def _imported_names(mod: str, path: Path, known: set[str]) -> set[str]:
    """Every name ``mod`` imports, anywhere in its body; in-package names resolved to modules."""
    package = mod if _is_package(path) else mod.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                stem = ".".join([*base, node.module] if node.module else base)
            else:
                stem = node.module or ""
            for alias in node.names:
                full = f"{stem}.{alias.name}"
                out.add(full if full in known else stem)
    return out


def _resolve(name: str, known: set[str]) -> str | None:
    """The in-package module ``name`` lands on (longest known prefix), or None if outside."""
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


@cache
def _graph() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """(edges among our modules, every imported name per module, including third-party); read once."""
    modules = _modules()
    known = set(modules)
    raw = {mod: _imported_names(mod, path, known) for mod, path in modules.items()}
    edges = {mod: {t for n in names if (t := _resolve(n, known)) and t != mod} for mod, names in raw.items()}
    for mod in edges:
        edges[mod] |= {p for t in list(edges[mod]) for p in _parents(t, known) if p != mod
                       and not _encloses(p, mod)}
    return edges, raw


def _parents(mod: str, known: set[str]) -> list[str]:
    """The packages Python initialises before ``mod`` (the root package excluded: it encloses everything)."""
    parts = mod.split(".")
    return [p for i in range(2, len(parts)) if (p := ".".join(parts[:i])) in known]


def _encloses(package: str, mod: str) -> bool:
    return mod.startswith(package + ".")


def _find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One cycle as a path ``[a, b, ..., a]``, or None; iterative DFS with colours."""
    white, grey, black = 0, 1, 2
    colour = dict.fromkeys(edges, white)
    for start in sorted(edges):
        if colour[start] != white:
            continue
        stack: list[tuple[str, list[str]]] = [(start, sorted(edges[start]))]
        colour[start] = grey
        while stack:
            node, todo = stack[-1]
            if not todo:
                colour[node] = black
                stack.pop()
                continue
            nxt = todo.pop(0)
            if colour[nxt] == grey:
                path = [n for n, _ in stack]
                return [*path[path.index(nxt) :], nxt]
            if colour[nxt] == white:
                colour[nxt] = grey
                stack.append((nxt, sorted(edges[nxt])))
    return None


def test_no_import_cycles() -> None:
    edges, _ = _graph()
    cycle = _find_cycle(edges)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


# Layer rules: package under vllm_remedy -> what it must not import. Names are sibling packages
# under vllm_remedy, except the third-party ones in EXTERNAL. vllm and remedies are the pure layers.
EXTERNAL = {"pyinfra", "kubernetes"}
NOT_FOR_PURE = ("kube", "connectors", "facts", "operations", "sim", "gameday", "commands", "pyinfra", "kubernetes")
LAYERS: dict[str, tuple[str, ...]] = {
    "vllm": NOT_FOR_PURE,
    "remedies": NOT_FOR_PURE,
    "kube": ("operations", "facts", "connectors", "sim", "gameday", "commands"),
    "sim": ("kube", "operations", "facts", "connectors", "remedies", "gameday", "commands"),
}

# Known exception "remedies read kube objects": remedies decide on Deployment/ReplicaSet/Node objects
# through kube's *pure* object helpers — annotation keys, revision history and rollback choice, revision
# diff, GPU labels, node health, label selectors. Listed by target, not by importer;
# test_pure_layers_stay_pure_transitively proves these helpers reach no I/O layer.
ALLOWED: dict[str, frozenset[str]] = {
    "remedies": frozenset(f"{ROOT}.kube.{m}" for m in (
        "annotations", "diff", "errors", "gpus", "health", "history", "rollout", "selectors",
    )),
}


# kube's pure helpers that the allowed ones use in turn (remedies never imports them itself): reached, never imported.
# kube.printable escapes manifest text for one output line; kube.diff's YAML uses it.
REACHED_ONLY: dict[str, frozenset[str]] = {"remedies": frozenset({f"{ROOT}.kube.printable"})}


def _forbidden_target(name: str, banned: tuple[str, ...]) -> str | None:
    for target in banned:
        full = target if target in EXTERNAL else f"{ROOT}.{target}"
        if name == full or name.startswith(full + "."):
            return target
    return None


def _in_layer(mod: str, layer: str) -> bool:
    prefix = f"{ROOT}.{layer}"
    return mod == prefix or mod.startswith(prefix + ".")


@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_layers_point_down(layer: str) -> None:
    _, raw = _graph()
    allowed = ALLOWED.get(layer, frozenset())
    bad = sorted(
        f"{mod} imports {name}"
        for mod, names in raw.items()
        if _in_layer(mod, layer)
        for name in names
        if _forbidden_target(name, LAYERS[layer]) and name not in allowed
    )
    assert not bad, f"{ROOT}.{layer} must not import {', '.join(LAYERS[layer])}:\n" + "\n".join(bad)


@pytest.mark.parametrize("layer", ["vllm", "remedies"])
def test_pure_layers_stay_pure_transitively(layer: str) -> None:
    """Through the allowed kube helpers, nothing pure reaches a layer that talks to a cluster or a host."""
    edges, raw = _graph()
    allowed = ALLOWED.get(layer, frozenset()) | REACHED_ONLY.get(layer, frozenset())
    seen: set[str] = set()
    todo = [m for m in raw if _in_layer(m, layer)]
    while todo:
        mod = todo.pop()
        if mod not in seen:
            seen.add(mod)
            todo.extend(edges[mod])
    banned = LAYERS[layer]
    modules = _modules()
    inert = {m for m in seen if _is_package(modules[m]) and not raw[m]}  # a package __init__ that imports nothing
    reached = sorted(m for m in seen if _forbidden_target(m, banned) and m not in allowed and m not in inert)
    external = sorted(f"{m} imports {n}" for m in seen for n in raw[m] if n.split(".")[0] in EXTERNAL
                      and _forbidden_target(n, banned))
    bad = reached + external
    assert not bad, f"{ROOT}.{layer} reaches, through its imports:\n" + "\n".join(bad)
    stale = sorted(REACHED_ONLY.get(layer, frozenset()) - seen)
    assert not stale, "stale REACHED_ONLY entries: " + ", ".join(stale)
    assert not [n for m in REACHED_ONLY.get(layer, frozenset()) for n in raw.get(m, ()) if n.startswith(ROOT)
                or n.split(".")[0] in EXTERNAL], "a REACHED_ONLY helper must import nothing of ours nor I/O"


def test_allowed_exceptions_are_still_needed() -> None:
    """An exception nobody uses any more is stale; drop it so it cannot hide a new import."""
    _, raw = _graph()
    stale = sorted(
        f"{layer} -> {target}"
        for layer, targets in ALLOWED.items()
        for target in targets
        if not any(target in names for mod, names in raw.items() if _in_layer(mod, layer))
    )
    assert not stale, "stale ALLOWED entries: " + ", ".join(stale)


#: Every top-level module or package of vllm_remedy by rank, bottom first (docs/architecture.md, "Layers").
#: An import may only point to a lower rank: two packages of one rank never import each other.
RANKS: tuple[tuple[str, ...], ...] = (
    ("errors", "lazy"),
    ("yamlfile", "envelope", "metrics", "prometheus"),
    ("vllm",),
    ("policy", "gitops", "hub"),
    ("kube", "alerts"),
    ("remedies",),
    ("facts", "connectors", "sim"),
    ("operations",),
    ("drift", "respond"),
    ("gameday",),
    ("commands",),
    ("cli", ""),
    ("__main__",),
)


def _rank(mod: str) -> int:
    top = mod.split(".")[1] if "." in mod else ""
    for i, names in enumerate(RANKS):
        if top in names:
            return i
    raise AssertionError(f"{mod}: its top-level package is not ranked in RANKS; place it")


def test_every_import_points_down_the_ranks() -> None:
    edges, _ = _graph()
    bad = sorted(f"{mod} (rank {_rank(mod)}) imports {t} (rank {_rank(t)})" for mod, targets in edges.items()
                 for t in targets if mod.split(".")[:2] != t.split(".")[:2] and _rank(t) >= _rank(mod)
                 and t != ROOT)
    assert not bad, "imports that do not point down:\n" + "\n".join(bad)


def test_a_circle_through_a_package_init_is_found() -> None:
    """Control: the shape an outside review built (a -> package p's __init__ -> p.x -> a) is reported."""
    edges = {"r.a": {"r.p.y"}, "r.p": {"r.p.x"}, "r.p.x": {"r.a"}, "r.p.y": set()}
    known = set(edges)
    for mod in edges:
        edges[mod] |= {p for t in list(edges[mod]) for p in _parents(t, known) if p != mod and not _encloses(p, mod)}
    assert _find_cycle(edges) == ["r.a", "r.p", "r.p.x", "r.a"]
