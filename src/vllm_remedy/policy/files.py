"""Policy files before validation: YAML → mapping (duplicate keys refused), ``extends`` resolved
relative to the file (``default`` with no default.yaml there: the built-in default, ``builtin``), deep merge, and a
record of which file set each key so errors blame the right one.

Why apart from :mod:`.loader`: :meth:`Policy.from_mapping <vllm_remedy.policy.model.Policy.from_mapping>`
needs this step and the loader needs ``Policy``; with this piece below both, neither imports the other.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..errors import UserError
from ..yamlfile import EventLimits, check_aliases, check_text
from . import builtin
from .messages import key_path

SUFFIXES = (".yaml", ".yml")
_LAST_PART = re.compile(r"(\.[^.\[\]]+|\[\d+\])$")


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key given twice: YAML would silently keep the last one."""


def _construct_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(None, None, f"key {key!r} is given twice", key_node.start_mark)
        seen.add(key)
    return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def read_mapping(path: Path) -> dict[str, Any]:
    """The top-level mapping of one policy file, or a one-line UserError."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"{path}: no such policy file") from None
    except IsADirectoryError:
        raise UserError(f"{path}: is a directory, expected a policy file") from None
    except UnicodeDecodeError:
        raise UserError(f"{path}: not UTF-8 text, expected a YAML policy") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read ({exc.strerror})") from None
    check_text(text, path)
    loader = _UniqueKeyLoader(text)  # a SafeLoader subclass
    EventLimits(path).watch(loader)
    try:
        node = loader.get_single_node()
        if node is not None:
            check_aliases(node, path)  # before anything is built: an alias bomb is refused, not expanded
        data = None if node is None else loader.construct_document(node)
    except yaml.YAMLError as exc:
        raise UserError(f"{path}: not valid YAML ({_yaml_reason(exc)})") from None
    finally:
        loader.dispose()
    if data is None:
        raise UserError(f"{path}: empty, expected a mapping of policy keys")
    if not isinstance(data, dict):
        kind = "a list" if isinstance(data, list) else f"a {type(data).__name__} scalar"
        raise UserError(f"{path}: expected a mapping of policy keys at the top level, got {kind}")
    for key in data:
        if not isinstance(key, str):
            raise UserError(f"{path}: {key}: expected a string key")
    return data


def _yaml_reason(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    return f"line {mark.line + 1}, column {mark.column + 1}: {problem}" if mark else problem


def _parent_path(child: Path, extends: Any) -> Path | None:
    """The policy file ``extends`` names beside ``child``; None for the built-in default (``builtin``): ``default``
    (or ``default.yaml`` / ``.yml``) where no such file lies there."""
    if not isinstance(extends, str) or not extends.strip():
        raise UserError(f'{child}: extends: expected the name of a policy next to this file (e.g. "default"), '
                        f"got {extends!r}")
    base = child.parent / extends
    candidates = [base] if base.suffix in SUFFIXES else [base.with_name(base.name + s) for s in SUFFIXES]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    if extends in (builtin.NAME, *(builtin.NAME + s for s in SUFFIXES)):
        return None
    tried = " or ".join(str(c) for c in candidates)
    raise UserError(f"{child}: extends: no policy file {tried}")


def _merge(base: Any, over: Any) -> Any:
    """Mappings merge key by key; anything else (lists included) in the child replaces the parent's."""
    if isinstance(base, Mapping) and isinstance(over, Mapping):
        out = dict(base)
        for key, value in over.items():
            out[key] = _merge(base[key], value) if key in base else value
        return out
    return over


def _record(data: Any, source: str, prefix: tuple[Any, ...], into: dict[str, str]) -> None:
    """Note which file set each key path, so an inherited bad value is blamed on the parent file."""
    into[key_path(prefix)] = source
    if isinstance(data, Mapping):
        for key, value in data.items():
            _record(value, source, (*prefix, key), into)
    elif isinstance(data, list):
        for i, value in enumerate(data):
            _record(value, source, (*prefix, i), into)


def _resolve(data: Mapping[str, Any], source: str, base_dir: Path | None,
             chain: tuple[Path, ...], provenance: dict[str, str]) -> dict[str, Any]:
    own = dict(data)
    extends = own.pop("extends", None)
    if "extends" in data:
        if base_dir is None:
            raise UserError(f"{source}: extends: only policies read from a file can extend another")
        parent_file = _parent_path(base_dir / Path(source).name, extends)
        if parent_file is None:  # the built-in default: it extends nothing
            parent = builtin.mapping()
            _record(parent, builtin.SOURCE, (), provenance)
            _record(dict(data), source, (), provenance)
            return _merge(parent, own)
        resolved = parent_file.resolve()
        if resolved in chain:
            cycle = " → ".join(p.name for p in (*chain, resolved))
            raise UserError(f"{source}: extends: cycle {cycle}")
        parent = _resolve(read_mapping(parent_file), str(parent_file), parent_file.parent,
                          (*chain, resolved), provenance)
        own = _merge(parent, own)
    _record(dict(data), source, (), provenance)
    return own


@dataclass(frozen=True)
class Resolved:
    """One policy's keys with every ``extends`` merged in, and who set each key."""

    data: dict[str, Any]
    source: str
    from_file: bool
    provenance: dict[str, str] = field(default_factory=dict)

    @property
    def default_name(self) -> str:
        """A file's stem (what host data names); otherwise the source as given."""
        return Path(self.source).stem if self.from_file else self.source

    def blame(self, path: str) -> str:
        """The file that set ``path`` (or its nearest parent key); the source itself when unknown."""
        return _blame(path, self.provenance, self.source)


def resolve(data: Mapping[str, Any], source: str) -> Resolved:
    """``data`` with ``extends`` resolved next to ``source`` (when it names a policy file), or one-line UserError."""
    if not isinstance(data, Mapping):
        raise UserError(f"{source}: expected a mapping of policy keys at the top level")
    src = Path(source)
    base_dir = src.parent if src.suffix in SUFFIXES else None
    provenance: dict[str, str] = {}
    chain = (src.resolve(),) if base_dir is not None else ()
    merged = _resolve(data, source, base_dir, chain, provenance)
    return Resolved(merged, source, base_dir is not None, provenance)


def _blame(path: str, provenance: Mapping[str, str], default: str) -> str:
    while path:
        if path in provenance:
            return provenance[path]
        shorter = _LAST_PART.sub("", path)
        path = shorter if shorter != path else ""
    return default
