"""Where ``vllm_flags_read`` finds things in one extracted release: modules, names through ``from x import``, class
bases, dataclass fields and whether a field is a ``bool`` (what ``get_kwargs`` turns into BooleanOptionalAction)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PARSER_FILES = ("utils/argparse_utils.py", "utils/__init__.py", "utils.py")
#: Type names ``get_kwargs`` branches on, by what they are to it.
_NAMES = {"bool": "bool", "str": "str", "int": "int", "float": "float", "None": "None", "dict": "dict", "Dict": "dict",
          "list": "list", "List": "list", "tuple": "tuple", "Tuple": "tuple", "set": "set", "Set": "set",
          "Literal": "Literal"}


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
        self.set_nargs = False  # get_kwargs gives a ``set[...]`` field nargs='+' (``collection_to_kwargs``)
        self.inverse = self.underscore = self.abbrev = self.dotted = False
        self.hooks_checked: set[str] = set()

    def read_parser_class(self) -> None:
        """What ``FlexibleArgumentParser`` and ``get_kwargs`` do in this release (``vllm_flags.py``'s docstring)."""
        for rel in PARSER_FILES:
            p = self.root / rel
            if not p.exists():
                continue
            tree = ast.parse(p.read_text(), str(p))
            classes = [c for c in tree.body if isinstance(c, ast.ClassDef) and c.name == "FlexibleArgumentParser"]
            if not classes:
                continue
            text = ast.unparse(classes[0])
            if "allow_abbrev" in text:
                raise Unreadable(f"{p}: FlexibleArgumentParser sets allow_abbrev; read it before trusting prefixes")
            self.inverse = "EnableDisableAction" in text and "register" in text
            self.abbrev = True
            parse_args = [f for f in classes[0].body if isinstance(f, ast.FunctionDef) and f.name == "parse_args"]
            # ``--a_b`` reaches argparse as ``--a-b`` (its error messages print that spelling)
            self.underscore = bool(parse_args) and "replace('_', '-')" in ast.unparse(parse_args[0])
            self.dotted = bool(re.search(r"'\.' in processed_arg|\"\.\" in processed_arg", text))
            break
        else:
            raise Unreadable(f"{self.root}: FlexibleArgumentParser not found")
        arg_utils = self.tree("vllm.engine.arg_utils")
        text = ast.unparse(arg_utils)
        self.optional_bool_str = "{bool, str, type(None)}" in text
        self.set_nargs = "contains_type(type_hints, set)" in text and "collection_to_kwargs" in text

    def check_hook(self, name: str) -> None:
        """A hook is skipped only while no override of it in vllm/ (platforms/rocm.py...) adds an argument."""
        if name in self.hooks_checked:
            return
        self.hooks_checked.add(name)
        for p in sorted(self.root.rglob("*.py")):
            text = p.read_text(errors="replace")
            if f"def {name}" not in text:
                continue
            for node in ast.walk(ast.parse(text, str(p))):
                if isinstance(node, ast.FunctionDef) and node.name == name and any(
                        isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr == "add_argument"
                        for c in ast.walk(node)):
                    raise Unreadable(f"{p}: {name} adds arguments; read it")

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
        if (source := _imported(tree, name)) is not None:
            return self.lookup(source[0], source[1], seen | {(module, name)})
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

    def fields_at(self, cls: ast.ClassDef, module: str) -> list[tuple[str, ast.expr, str]]:
        """``fields`` with the module each annotation is written in (where its names resolve)."""
        out: dict[str, tuple[ast.expr, str]] = {}
        for c, m in reversed(self.mro(cls, module)):
            for n in c.body:
                if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name):
                    text = ast.unparse(n.annotation)
                    if "ClassVar" in text or "InitVar" in text:
                        continue
                    out[n.target.id] = (n.annotation, m)
        return [(k, a, m) for k, (a, m) in out.items()]

    def field_kwargs(self, annotation: ast.expr, module: str) -> dict[str, object]:
        """The ``action``/``nargs`` ``get_kwargs`` gives a field of this type, in its order: a dataclass takes one JSON
        word; ``bool | str | None`` nargs='?' (where the release has that branch); a bool BooleanOptionalAction; a
        Literal one word; a tuple '+' (or its length), a list '+', a set '+' where ``collection_to_kwargs`` reads
        sets; anything else one word."""
        hints = self.hints(annotation, module, 0)
        kinds = {k for k, _ in hints}
        if "dataclass" in kinds:
            return {}
        if self.optional_bool_str and kinds == {"bool", "str", "None"}:
            return {"nargs": "?"}
        if "bool" in kinds:
            return {"action": "BooleanOptionalAction"}
        if "Literal" in kinds:
            return {}
        for k, node in hints:
            if k == "tuple":
                elts = node.elts if isinstance(node, ast.Tuple) else [node]
                dots = any(isinstance(x, ast.Constant) and x.value is Ellipsis for x in elts)
                return {"nargs": "+" if dots else len(elts)}
        if "list" in kinds or ("set" in kinds and self.set_nargs):
            return {"nargs": "+"}
        return {}

    def hints(self, e: ast.expr, module: str, depth: int) -> list[tuple[str, ast.expr]]:
        """The flattened type hints of an annotation (vLLM's ``get_type_hints``: Optional, Union, ``|`` and Annotated
        unwrapped; a type alias defined in vllm followed), each as a kind and, for a subscript, its arguments."""
        if depth > 10:
            raise Unreadable(f"{self.root}: type alias loop in {module}")
        if isinstance(e, ast.Constant):
            if isinstance(e.value, str):
                return self.hints(ast.parse(e.value, mode="eval").body, module, depth + 1)
            return [("None", e)] if e.value is None else [("other", e)]
        if isinstance(e, ast.BinOp) and isinstance(e.op, ast.BitOr):
            return self.hints(e.left, module, depth) + self.hints(e.right, module, depth)
        if isinstance(e, ast.Subscript):
            base = e.value.attr if isinstance(e.value, ast.Attribute) else getattr(e.value, "id", "")
            args = e.slice.elts if isinstance(e.slice, ast.Tuple) else [e.slice]
            if base == "Optional":
                return [*self.hints(args[0], module, depth), ("None", e)]
            if base == "Union":
                return [h for a in args for h in self.hints(a, module, depth)]
            if base in ("Annotated", "SkipValidation"):  # pydantic's SkipValidation[X] is Annotated[X, ...]
                return self.hints(args[0], module, depth)
            return [(_NAMES.get(base, "other"), e.slice)]
        if isinstance(e, ast.Name):
            if e.id in _NAMES:
                return [(_NAMES[e.id], e)]
            try:
                node, m = self.lookup_any(e.id, module)
            except NotVllm:
                return [("other", e)]  # torch.dtype, Any, a pydantic or stdlib type: one word
            if isinstance(node, ast.ClassDef):
                decorated = " ".join(ast.unparse(d) for d in node.decorator_list)
                return [("dataclass" if "dataclass" in decorated or "config" in decorated else "class", e)]
            if isinstance(node, ast.expr):
                return self.hints(node, m, depth + 1)
        return [("other", e)]

    def lookup_any(self, name: str, module: str, seen: frozenset = frozenset()) -> tuple[ast.AST, str]:
        """``lookup`` that also finds a type alias (``X = Literal[...]``, ``X: TypeAlias = ...``, ``type X = ...``):
        the aliased expression."""
        if (module, name) in seen:
            raise Unreadable(f"import cycle for {name} in {module}")
        tree = self.tree(module)
        for n in reversed(tree.body):
            if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == name:
                return n, module
            if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in n.targets):
                return n.value, module
            if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name) and n.target.id == name and n.value:
                return n.value, module
            if type(n).__name__ == "TypeAlias" and getattr(n.name, "id", None) == name:
                return n.value, module  # type: ignore[attr-defined]
        if (source := _imported(tree, name)) is not None:
            return self.lookup_any(source[0], source[1], seen | {(module, name)})
        raise NotVllm(f"{self.root}: cannot resolve {name} in {module}")

    def is_bool(self, annotation: ast.expr) -> bool:
        """``get_kwargs`` makes a ``bool`` field BooleanOptionalAction, except ``bool | str | None`` (nargs='?')."""
        if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
            annotation = ast.parse(annotation.value, mode="eval").body
        if "bool" not in {n.id for n in ast.walk(annotation) if isinstance(n, ast.Name)}:
            return False
        text = ast.unparse(annotation).replace(" ", "")
        parts = set(re.split(r"[|,\[\]]", text)) - {"", "Optional", "Union"}
        return not (self.optional_bool_str and parts <= {"bool", "str", "None"} and "str" in parts)


def _imported(tree: ast.Module, name: str) -> tuple[str, str] | None:
    """(its name there, the vllm module) ``name`` is imported from by an absolute ``from vllm... import``, anywhere in
    ``tree`` (imports inside functions included), or None."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and node.module.startswith("vllm"):
            for alias in node.names:
                if (alias.asname or alias.name) == name:
                    return alias.name, node.module
    return None
