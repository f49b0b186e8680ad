"""Where ``vllm_flags_read`` finds things in one extracted release: modules, names through ``from x import``, class
bases, dataclass fields and whether a field is a ``bool`` (what ``get_kwargs`` turns into BooleanOptionalAction)."""

from __future__ import annotations

import ast
import re
from pathlib import Path


class Unreadable(Exception):
    """A construct the generator cannot read statically: the table would silently miss options."""


class NotVllm(Unreadable):
    """A name defined neither in the module nor imported from vllm: a base class from pydantic or the stdlib."""


class Source:
    """One extracted release's modules, parsed once."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.trees: dict[str, ast.Module] = {}
        self.optional_bool_str = False

    def path(self, module: str) -> Path | None:
        rel = Path(*module.split("."))
        for p in (self.root.parent / rel.with_suffix(".py"), self.root.parent / rel / "__init__.py"):
            if p.exists():
                return p
        return None

    def tree(self, module: str) -> ast.Module:
        if module not in self.trees:
            p = self.path(module)
            if p is None:
                raise Unreadable(f"{self.root}: module {module} not extracted")
            self.trees[module] = ast.parse(p.read_text(), str(p))
        return self.trees[module]

    def lookup(self, name: str, module: str, seen: frozenset[str] = frozenset()) -> tuple[ast.AST, str]:
        """A top-level def/class ``name`` as ``module`` sees it, following ``from x import name`` (also lazy
        imports inside functions, which vLLM uses to avoid import cycles)."""
        if (module, name) in seen:
            raise Unreadable(f"import cycle for {name} in {module}")
        tree = self.tree(module)
        found = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == name]
        if found:
            return found[-1], module
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    if (alias.asname or alias.name) == name and node.module.startswith("vllm"):
                        return self.lookup(alias.name, node.module, seen | {(module, name)})
        raise NotVllm(f"{self.root}: cannot resolve {name} in {module}")

    def method(self, cls: ast.ClassDef, module: str, name: str) -> tuple[ast.FunctionDef, ast.ClassDef, str]:
        """``cls.name`` by the class's bases (the last def in a body wins, as in Python)."""
        for c, m in self.mro(cls, module):
            defs = [n for n in c.body if isinstance(n, ast.FunctionDef) and n.name == name]
            if defs:
                return defs[-1], c, m
        raise Unreadable(f"{self.root}: no method {name} on {cls.name}")

    def mro(self, cls: ast.ClassDef, module: str) -> list[tuple[ast.ClassDef, str]]:
        out = [(cls, module)]
        for base in cls.bases:
            if isinstance(base, ast.Name):
                try:
                    node, m = self.lookup(base.id, module)
                except NotVllm:
                    continue  # a base from outside vllm (pydantic, ABC): no vLLM fields or methods
                if isinstance(node, ast.ClassDef):
                    out += self.mro(node, m)
        return out

    def fields(self, cls: ast.ClassDef, module: str) -> list[tuple[str, ast.expr]]:
        """Dataclass fields in ``dataclasses.fields`` order: bases first, a redefinition keeps its first place."""
        out: dict[str, ast.expr] = {}
        for c, _ in reversed(self.mro(cls, module)):
            for n in c.body:
                if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name):
                    text = ast.unparse(n.annotation)
                    if "ClassVar" in text or "InitVar" in text:
                        continue
                    out[n.target.id] = n.annotation
        return list(out.items())

    def is_bool(self, annotation: ast.expr) -> bool:
        """``get_kwargs`` makes a ``bool`` field BooleanOptionalAction, except ``bool | str | None`` (nargs='?')."""
        if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
            annotation = ast.parse(annotation.value, mode="eval").body
        if "bool" not in {n.id for n in ast.walk(annotation) if isinstance(n, ast.Name)}:
            return False
        text = ast.unparse(annotation).replace(" ", "")
        parts = set(re.split(r"[|,\[\]]", text)) - {"", "Optional", "Union"}
        return not (self.optional_bool_str and parts <= {"bool", "str", "None"} and "str" in parts)
