"""Reading a user's YAML file (a manifest, a game-day scenario, a rehearsal seed) with one-line errors naming it.

Input is bounded before it is built. :class:`EventLimits` counts parser events and stops at the first one
past a limit (nesting depth, documents, nodes, alias references, number digits): first on a pass of libyaml's
C parser (:func:`check_text`, milliseconds), then again inside the reader's own parse, so hostile input never
reaches the recursive composer or ``int()`` (RecursionError, ValueError tracebacks) and costs what was read
up to the limit, not the whole file. After composing, :func:`check_aliases` refuses a
document whose few aliases expand to billions of nodes ("billion laughs"), which would hang every walk over
the data. Both PyYAML and ruamel.yaml are covered (same event class names; nodes of the same shape:
``.value`` is a list of nodes, or of (key, value) pairs for mappings).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from vllm_remedy.errors import UserError

MAX_CHARS = 16 * 1024 * 1024
# Nodes that aliases add beyond those written out; real `<<: *defaults` reuse stays far below this.
MAX_ALIAS_EXPANSION = 100_000
# Read limits; Kubernetes manifests nest ~20 levels, a vLLM deployment has a few hundred nodes.
MAX_DEPTH = 100  # well inside Python's recursion limit, for the composer and every recursive walk after it
MAX_DOCUMENTS = 1_000
MAX_NODES = 10_000  # bounds the pure-Python parse of what is accepted (~0.5 s); largest real: 258
MAX_ALIAS_REFS = 1_000
MAX_INT_DIGITS = 1_000  # int64 has 19; Python's int() refuses past 4300 with a ValueError

_LONG_DIGITS = re.compile(rf"\d{{{MAX_INT_DIGITS + 1}}}")
#: What YAML 1.1 may resolve to a number: digits with signs, points, exponents, base prefixes, underscores and
#: the base-60 colons (``1:00:00`` is 3600); a long one is refused whatever its separators break the digits into.
_NUMBERISH = re.compile(r"[-+]?[0-9.][0-9a-fA-FxXoObB_:.eE+-]*")
_NUMBER_TAGS = ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")


class EventLimits:
    """Counts a parser's events as the composer takes them; a UserError at the first one past a limit."""

    def __init__(self, source: object) -> None:
        self.source = source
        self.depth = self.documents = self.nodes = self.aliases = 0

    def watch(self, parser: Any) -> None:
        """Route ``parser.get_event`` (PyYAML loader or ruamel.yaml parser) through :meth:`see`."""
        get_event: Callable[[], Any] = parser.get_event

        def guarded() -> Any:
            return self.see(get_event())

        parser.get_event = guarded

    def _refuse(self, what: str, event: Any) -> None:
        """Raise the one-line refusal, at the line of ``event`` (or of a YAMLError's problem)."""
        mark = getattr(event, "start_mark", None) or getattr(event, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise UserError(f"{self.source}: refused: {what}{where}")

    def see(self, event: Any) -> Any:
        """The event, after counting it."""
        kind = type(event).__name__
        if kind in ("SequenceStartEvent", "MappingStartEvent"):
            self.depth += 1
            if self.depth > MAX_DEPTH:
                self._refuse(f"YAML nested deeper than {MAX_DEPTH} levels", event)
        elif kind in ("SequenceEndEvent", "MappingEndEvent"):
            self.depth -= 1
        elif kind == "DocumentStartEvent":
            self.documents += 1
            if self.documents > MAX_DOCUMENTS:
                self._refuse(f"more than {MAX_DOCUMENTS} YAML documents", event)
        elif kind == "AliasEvent":
            self.aliases += 1
            if self.aliases > MAX_ALIAS_REFS:
                self._refuse(f"more than {MAX_ALIAS_REFS} YAML alias references", event)
        elif kind == "ScalarEvent" and (not event.style or event.tag in _NUMBER_TAGS) \
                and (_LONG_DIGITS.search(event.value.replace("_", ""))
                     or (len(event.value) > MAX_INT_DIGITS and _NUMBERISH.fullmatch(event.value))):
            self._refuse(f"a number of more than {MAX_INT_DIGITS} digits", event)
        if kind in ("SequenceStartEvent", "MappingStartEvent", "ScalarEvent", "AliasEvent"):
            self.nodes += 1
            if self.nodes > MAX_NODES:
                self._refuse(f"more than {MAX_NODES} YAML nodes", event)
        return event


def check_size(chars: int, source: object) -> None:
    """Refuse input of more than MAX_CHARS characters, before any parse."""
    if chars > MAX_CHARS:
        raise UserError(f"{source}: refused: larger than {MAX_CHARS // (1024 * 1024)} MiB")


def check_text(text: str, source: object) -> None:
    """Size, then every event limit on a pass of libyaml's C parser, before the pure-Python parse.

    The pure-Python scanners cost ~1 µs a character and ~50 µs a node (and rescan up to 1024 pending flow
    openers per token), so refusing only from inside them takes up to a second; in C it takes milliseconds.
    Syntax errors are left to the reader's own parser, which words them, except libyaml's own depth limit
    (1000 levels, hit while it scans ahead of the events). Without libyaml, the readers' :class:`EventLimits`
    still refuse, only later.
    """
    check_size(len(text), source)
    if not getattr(yaml, "__with_libyaml__", False):
        return
    limits = EventLimits(source)
    parser = yaml.CSafeLoader(text)
    try:
        while parser.check_event():
            limits.see(parser.get_event())
    except yaml.MarkedYAMLError as exc:
        if exc.problem == "exceeded maximum nesting depth" and exc.problem_mark is not None:
            limits._refuse(f"YAML nested deeper than {MAX_DEPTH} levels", exc)
    except yaml.YAMLError:
        pass
    finally:
        parser.dispose()


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


def load_text(text: str, source: object) -> Any:
    """One YAML document read within every limit (UserError naming ``source``); syntax errors stay YAMLError."""
    check_text(text, source)
    loader = yaml.SafeLoader(text)
    EventLimits(source).watch(loader)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        check_aliases(node, source)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def read_yaml(path: Path, what: str) -> Any:
    """The parsed document; UserError ``<path>: cannot read <what>: ...`` or ``<path>: not valid YAML: ...``."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise UserError(f"{path}: cannot read {what}: {exc.strerror}") from None
    try:
        return load_text(text, path)
    except yaml.YAMLError as exc:
        raise UserError(f"{path}: not valid YAML: {str(exc).splitlines()[0]}") from None


def load_packaged(text: str) -> Any:
    """A YAML file this package ships (catalogs, rehearsal seeds, the residual table): trusted, so not bounded, and
    parsed by libyaml when PyYAML has it — the same SafeLoader constructors, ~8x faster than the pure-Python parser,
    which every deploy, CLI run and rehearsal cluster otherwise paid for (~35 ms of CPU for the catalogs alone)."""
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
