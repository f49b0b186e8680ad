"""Pydantic's ValidationError → the one line a user reads: ``<file>: <key.path>: expected …, got …``."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from .scalars import POLICY_ERROR, got

Loc = tuple[int | str, ...]

# Pydantic's built-in error types we can meet (structure, not scalars): what the user should have written.
_EXPECTED = {
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
    "dict_type": "a mapping",
    "mapping_type": "a mapping",
    "tuple_type": "a list",
    "list_type": "a list",
    "iterable_type": "a list",
    "string_type": "a string",
    "int_type": "an integer",
    "int_parsing": "an integer",
    "bool_type": "true or false",
}


def key_path(loc: Loc) -> str:
    """``("known_good", 0, "flags")`` → ``known_good[0].flags``."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _allowed_keys(model: type[BaseModel], loc: Loc) -> list[str]:
    """The keys the model accepts at ``loc`` (walking nested models), for "did you mean" hints."""
    current: Any = model
    for part in loc:
        if isinstance(part, int) or not (isinstance(current, type) and issubclass(current, BaseModel)):
            current = _inner_model(current)
            if isinstance(part, int):
                continue
        if not (isinstance(current, type) and issubclass(current, BaseModel)):
            return []
        field = next((f for n, f in current.model_fields.items() if (f.alias or n) == part), None)
        if field is None:
            return []
        current = _inner_model(field.annotation)
    if isinstance(current, type) and issubclass(current, BaseModel):
        return [f.alias or n for n, f in current.model_fields.items()]
    return []


def _inner_model(annotation: Any) -> Any:
    """The BaseModel inside ``X | None`` or ``tuple[X, ...]``, else the annotation itself."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        found = _inner_model(arg)
        if isinstance(found, type) and issubclass(found, BaseModel):
            return found
    return annotation


def describe(err: ErrorDetails, model: type[BaseModel]) -> tuple[str, str]:
    """(key path, message) for one pydantic error."""
    loc: Loc = tuple(err["loc"])
    kind = err["type"]
    ctx: Mapping[str, Any] = err.get("ctx") or {}
    if kind == "policy_cross":
        return str(ctx["path"]), err["msg"]
    if kind == POLICY_ERROR:
        return key_path(loc), err["msg"]
    if kind == "missing":
        return key_path(loc), "required key is missing"
    if kind == "extra_forbidden":
        parent, key = loc[:-1], str(loc[-1])
        allowed = _allowed_keys(model, parent)
        hint = difflib.get_close_matches(key, allowed, n=1)
        if hint:
            return key_path(loc), f"unknown key (did you mean {hint[0]}?)"
        return key_path(loc), "unknown key" + (f" (expected one of: {', '.join(allowed)})" if allowed else "")
    if kind == "literal_error":
        return key_path(loc), f"expected {ctx.get('expected')}, got {got(err.get('input'))}"
    expected = _EXPECTED.get(kind)
    if expected is None:
        text = err["msg"]
        expected = text[0].lower() + text[1:] if text else kind
        return key_path(loc), f"{expected}, got {got(err.get('input'))}"
    return key_path(loc), f"expected {expected}, got {got(err.get('input'))}"


def one_line(exc: ValidationError, model: type[BaseModel], source_of: Callable[[str], str],
             data: Mapping[str, Any] | None = None) -> str:
    """The first error as ``<file>: <path>: <message>``, plus "(and N more)"; ``source_of`` maps a key
    path to the file that set it (a parent policy, for an inherited key). With ``data``, "first" means
    first in the file's key order, as the user reads it, not pydantic's field order."""
    errors = exc.errors(include_url=False)
    if data is not None:
        order = {key: i for i, key in enumerate(data)}
        errors.sort(key=lambda e: order.get(e["loc"][0], len(order)) if e["loc"] else len(order))
    path, message = describe(errors[0], model)
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    where = f"{source_of(path)}: {path}: " if path else f"{source_of(path)}: "
    return f"{where}{message}{more}"
