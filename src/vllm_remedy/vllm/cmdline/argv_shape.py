"""``command``/``args`` shapes the Kubernetes API server refuses (both are ``[]string``).

YAML writes ``8192`` or ``true`` unquoted as a number or a boolean, and ``args: "--model m"`` is one string, not a
list: the API server refuses the whole object (400) whatever the container runs, so no pod ever runs that argv.
Reading ``8192`` as the word "8192" would check a pod that never exists.

A YAML null (``- ~``, an empty ``-``) is not refused: the API server decodes JSON with Go's encoding/json rules
(sigs.k8s.io/json), where "unmarshaling a JSON null into any other Go type has no effect on the value and produces no
error", so a null item of a ``[]string`` (or a ``map[string]string`` value) is the zero value, the empty string.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def kind_of(value: Any) -> str:
    """``a boolean``, ``an integer``, ``null``: what the YAML decoded a value as, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    names = {int: "an integer", float: "a number", str: "a string", list: "a list", dict: "a mapping"}
    return next((n for t, n in names.items() if isinstance(value, t)), f"a {type(value).__name__}")


def argv_problem(container: Mapping[str, Any]) -> str | None:
    """Why Kubernetes refuses the container's ``command``/``args`` (one phrase naming the field and position)."""
    for key in ("command", "args"):
        value = container.get(key)
        if value is None:
            continue
        if not isinstance(value, list):
            return (f"{key} is {kind_of(value)}, not a list of strings, so Kubernetes refuses the manifest (write "
                    f"each word as its own item: {key}: [\"--flag\", \"value\"])")
        for i, item in enumerate(value):
            if item is not None and not isinstance(item, str):  # null: Go's JSON decoding leaves "" (see above)
                shown = "" if isinstance(item, bool) else f" ({item!r})"
                return (f"{key}[{i}] is {kind_of(item)}{shown}, not a string, so Kubernetes refuses the manifest "
                        "(quote the value as you meant it)")
    return None
