"""A package's names imported on first use (PEP 562), so importing the package does not import every submodule."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def names(package: str, table: Mapping[str, str], namespace: dict[str, Any]) -> Callable[[str], Any]:
    """The module ``__getattr__`` of ``package``: each name of ``table`` (name -> submodule) imported from its submodule
    on first use and kept in ``namespace`` (the package's globals); AttributeError for anything else, so
    ``from package import <submodule>`` still imports the submodule."""

    def __getattr__(name: str) -> Any:
        sub = table.get(name)
        if sub is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{sub}"), name)
        namespace[name] = value
        return value

    return __getattr__
