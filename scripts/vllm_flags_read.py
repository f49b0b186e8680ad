"""The reader behind ``vllm_flags.py``: one release's ``vllm serve`` option strings from the AST of its source, as
vLLM's parser registers them (what it reads and what makes it fail: ``vllm_flags.py``'s docstring)."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

from vllm_flags_source import Source, Unreadable  # scripts/ is on sys.path when vllm_flags.py runs

__all__ = ["Release", "Unreadable"]

#: Calls the parser is handed to that add no option: checked per release (``check_hook``: no override in vllm/ calls
#: ``add_argument``), so an out-of-tree platform or plugin is what remains unread.
HOOKS = frozenset({"pre_register_and_update", "show_filtered_argument_or_group_from_help"})


@dataclass
class Kwargs:
    """``get_kwargs(Config)``: one ``--field`` per dataclass field; ``overrides`` are the keys a caller assigns."""

    cls: ast.ClassDef
    module: str
    overrides: dict[str, dict[str, ast.expr]] = field(default_factory=dict)


@dataclass
class FieldKwargs:
    """``get_kwargs(Config)["field"]``, maybe inside ``{**..., "default": None}`` (``extra`` keys)."""

    of: Kwargs
    name: str
    extra: dict[str, ast.expr] = field(default_factory=dict)


PARSER, SUBPARSERS, OTHER = "<serve parser>", "<subparsers>", "<other parser>"
DELETED = ast.Constant(value="<deleted>")  # ``del kwargs["field"]["nargs"]``: argparse's default again
#: Actions that take no word (argparse's ``nargs=0`` actions, vLLM's BooleanOptionalAction subclass).
NO_VALUE = frozenset({"store_true", "store_false", "store_const", "append_const", "count", "help", "version",
                      "BooleanOptionalAction", "EnableDisableAction"})


class Release(Source):
    """One extracted release: the walk from the serve subcommand that registers option strings."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.options: dict[str, None] = {}  # in registration order
        self.nargs: dict[str, str] = {}  # option string -> words it takes: "0", "1", "?", "+", "*" or a count
        self.shown: dict[str, str] = {}  # option string -> its action's option strings as argparse prints them
        self.depth = 0

    # -- the walk -----------------------------------------------------------------------------------------------
    def read(self) -> None:
        self.read_parser_class()
        serve = self.path("vllm.entrypoints.cli.serve")
        if serve is not None:
            tree = self.tree("vllm.entrypoints.cli.serve")
            inits = [f for c in tree.body if isinstance(c, ast.ClassDef) for f in c.body
                     if isinstance(f, ast.FunctionDef) and f.name == "subparser_init"]
            if len(inits) != 1:
                raise Unreadable(f"{self.root}: {len(inits)} subparser_init in entrypoints/cli/serve.py")
            # its one add_parser is serve's, named ``self.name`` from 0.11.0
            self.call(inits[0], "vllm.entrypoints.cli.serve", {"subparsers": SUBPARSERS, "<serve>": True}, None)
        else:
            main, module = self.lookup("main", "vllm.scripts")
            assert isinstance(main, ast.FunctionDef)
            self.call(main, module, {}, None)
        if "--help" not in self.options:
            raise Unreadable(f"{self.root}: no serve parser found (or it has no --help)")

    def call(self, fn: ast.FunctionDef, module: str, env: dict[str, object], cls: ast.ClassDef | None) -> object:
        self.depth += 1
        if self.depth > 30:
            raise Unreadable(f"{self.root}: recursion through {fn.name}")
        try:
            returned: list[object] = []
            self.block(fn.body, env, module, cls, returned)
            return returned[-1] if returned else None
        finally:
            self.depth -= 1

    def block(self, stmts: list[ast.stmt], env: dict, module: str, cls, returned: list) -> None:
        for s in stmts:
            self.stmt(s, env, module, cls, returned)

    def stmt(self, s: ast.stmt, env: dict, module: str, cls, returned: list) -> None:
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return
        if isinstance(s, ast.Assign):
            value = self.expr(s.value, env, module, cls)
            for t in s.targets:
                if isinstance(t, ast.Name):
                    env[t.id] = value
                elif isinstance(t, ast.Subscript):
                    self.assign_key(t, s.value, env, module, cls)
        elif isinstance(s, ast.AnnAssign) and s.value is not None and isinstance(s.target, ast.Name):
            env[s.target.id] = self.expr(s.value, env, module, cls)
        elif isinstance(s, ast.Delete):
            for t in s.targets:
                if isinstance(t, ast.Subscript):
                    self.assign_key(t, DELETED, env, module, cls)
        elif isinstance(s, ast.Expr):
            self.expr(s.value, env, module, cls)
        elif isinstance(s, ast.Return) and s.value is not None:
            returned.append(self.expr(s.value, env, module, cls))
        elif isinstance(s, ast.If):
            self.block(s.body, env, module, cls, returned)
            self.block(s.orelse, env, module, cls, returned)
        elif isinstance(s, (ast.For, ast.AsyncFor)):
            self.loop(s, env, module, cls, returned)
        elif isinstance(s, ast.Try):
            for part in (s.body, *(h.body for h in s.handlers), s.orelse, s.finalbody):
                self.block(part, env, module, cls, returned)
        elif isinstance(s, (ast.With, ast.AsyncWith)):
            self.block(s.body, env, module, cls, returned)

    def assign_key(self, target: ast.Subscript, value: ast.expr, env: dict, module: str, cls) -> None:
        """``kwargs["field"]["action"] = ...``: remembered, it decides the field's action and extra flags."""
        inner = target.value
        if isinstance(inner, ast.Subscript) and isinstance(target.slice, ast.Constant):
            obj = self.expr(inner.value, env, module, cls)
            key = inner.slice
            if isinstance(obj, Kwargs) and isinstance(key, ast.Constant):
                obj.overrides.setdefault(key.value, {})[target.slice.value] = value

    def loop(self, s: ast.For | ast.AsyncFor, env: dict, module: str, cls, returned: list) -> None:
        it = s.iter
        if (isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) and it.func.attr == "items"
                and isinstance(s.target, ast.Tuple) and len(s.target.elts) == 2):
            obj = self.expr(it.func.value, env, module, cls)
            if isinstance(obj, Kwargs):
                k, v = s.target.elts
                for name, _ in self.fields(obj.cls, obj.module):
                    inner = dict(env)
                    inner[k.id] = name  # type: ignore[attr-defined]
                    inner[v.id] = FieldKwargs(obj, name)  # type: ignore[attr-defined]
                    self.block(s.body, inner, module, cls, returned)
                return
        values = self.expr(it, env, module, cls)
        if isinstance(values, list):
            for item in values:
                inner = dict(env)
                self.bind(s.target, item, inner)
                self.block(s.body, inner, module, cls, returned)
            return
        self.block(s.body, dict(env), module, cls, returned)  # unknown items: an add_argument on them fails loudly

    @staticmethod
    def bind(target: ast.expr, item: object, env: dict) -> None:
        if isinstance(target, ast.Name):
            env[target.id] = item
        elif isinstance(target, ast.Tuple) and isinstance(item, (list, tuple)):
            for t, i in zip(target.elts, item, strict=False):
                Release.bind(t, i, env)

    def expr(self, e: ast.expr, env: dict, module: str, cls) -> object:
        if isinstance(e, ast.Constant):
            return e.value
        if isinstance(e, ast.Name):
            if e.id in env:
                return env[e.id]
            return {"bool": bool, "str": str, "int": int, "float": float}.get(e.id)
        if isinstance(e, (ast.List, ast.Tuple)):
            return [self.expr(x, env, module, cls) for x in e.elts]
        if isinstance(e, ast.JoinedStr):
            parts = []
            for v in e.values:
                got = self.expr(v.value if isinstance(v, ast.FormattedValue) else v, env, module, cls)
                if not isinstance(got, str):
                    return None
                parts.append(got)
            return "".join(parts)
        if isinstance(e, ast.Subscript):
            obj = self.expr(e.value, env, module, cls)
            key = self.expr(e.slice, env, module, cls)
            if isinstance(obj, Kwargs) and isinstance(key, str):
                return FieldKwargs(obj, key)
            return None
        if isinstance(e, ast.Dict):
            spread = [self.expr(v, env, module, cls) for k, v in zip(e.keys, e.values, strict=True) if k is None]
            if len(spread) == 1 and isinstance(spread[0], FieldKwargs):
                extra = {k.value: v for k, v in zip(e.keys, e.values, strict=True) if isinstance(k, ast.Constant)}
                return FieldKwargs(spread[0].of, spread[0].name, {**spread[0].extra, **extra})
            return None
        if isinstance(e, ast.Call):
            return self.call_expr(e, env, module, cls)
        return None

    def call_expr(self, e: ast.Call, env: dict, module: str, cls) -> object:
        f = e.func
        if isinstance(f, ast.Attribute):
            recv = self.expr(f.value, env, module, cls) if not _is_super(f.value) else None
            if f.attr == "replace" and isinstance(recv, str):
                a, b = (self.expr(x, env, module, cls) for x in e.args)
                return recv.replace(a, b)  # type: ignore[arg-type]
            if f.attr == "pop" and isinstance(recv, FieldKwargs):
                key = self.expr(e.args[0], env, module, cls)
                given = recv.of.overrides.get(recv.name, {}).get(key)  # type: ignore[arg-type]
                if given is not None and given is not DELETED:
                    return self.expr(given, env, module, cls)
                return self.expr(e.args[1], env, module, cls) if len(e.args) > 1 else None
            if f.attr == "add_subparsers":
                return SUBPARSERS
            if f.attr == "add_parser" and recv == SUBPARSERS:
                if any(k.arg == "add_help" for k in e.keywords):
                    raise Unreadable(f"{self.root}: add_parser(add_help=...) not read")
                name = self.expr(e.args[0], env, module, cls) if e.args else None
                if name != "serve" and not env.get("<serve>"):
                    return OTHER
                for h in ("-h", "--help"):
                    self.options[h] = None
                    self.nargs[h] = "0"
                    self.shown[h] = "-h/--help"
                return PARSER
            if recv == PARSER and f.attr == "add_argument":
                self.register(e, env, module, cls)
                return None
            if recv == PARSER and f.attr in ("add_argument_group", "add_mutually_exclusive_group"):
                return PARSER
            if recv in (PARSER, OTHER, SUBPARSERS):
                return None  # set_defaults, epilog...: no option string
        if isinstance(f, ast.Name) and f.id == "FlexibleArgumentParser":
            return OTHER
        if isinstance(f, ast.Name) and f.id in ("get_kwargs", "_compute_kwargs"):
            target = self.expr(e.args[0], env, module, cls) if isinstance(e.args[0], ast.Name) and \
                e.args[0].id in env else None
            if isinstance(target, tuple):
                return Kwargs(*target)
            node, m = self.lookup(e.args[0].id, module) if isinstance(e.args[0], ast.Name) else (None, "")
            if not isinstance(node, ast.ClassDef):
                raise Unreadable(f"{self.root}: get_kwargs of {ast.unparse(e.args[0])} in {module}")
            return Kwargs(node, m)
        args = [self.expr(a, env, module, cls) for a in e.args]
        handed = [a for a in args if a == PARSER or isinstance(a, Kwargs)]
        if not handed:
            return None
        name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
        if name in HOOKS:
            self.check_hook(name)
            return None
        fn, owner, m = self.resolve(f, env, module, cls)
        params = [a.arg for a in fn.args.args]
        inner: dict[str, object] = {}
        is_method = any(isinstance(d, ast.Name) and d.id in ("classmethod", "staticmethod") for d in
                        fn.decorator_list) or owner is not None
        static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in fn.decorator_list)
        if is_method and not static and params:
            inner[params[0]] = self.bound_class(f, env, module, cls)
            params = params[1:]
        for p, a in zip(params, args, strict=False):
            inner[p] = a
        for kw in e.keywords:
            if kw.arg:
                inner[kw.arg] = self.expr(kw.value, env, module, cls)
        returned = self.call(fn, m, inner, owner)
        return returned if returned is not None else handed[0]

    def bound_class(self, f: ast.expr, env: dict, module: str, cls) -> object:
        """What ``cls`` is inside a classmethod: the class named at the call (``FrontendArgs.add_cli_args``), the
        caller's own class for ``cls.x``/``super().x``."""
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
            bound = env.get(f.value.id)
            if isinstance(bound, tuple):
                return bound
            if f.value.id not in ("self",):
                node, m = self.lookup(f.value.id, module)
                return (node, m)
        return env.get("cls") or env.get("self")

    def resolve(self, f: ast.expr, env: dict, module: str, cls) -> tuple[ast.FunctionDef, ast.ClassDef | None, str]:
        if isinstance(f, ast.Name):
            node, m = self.lookup(f.id, module)
            if isinstance(node, ast.FunctionDef):
                return node, None, m
        if isinstance(f, ast.Attribute):
            if _is_super(f.value):
                here = env.get("cls") or env.get("self")
                if isinstance(here, tuple):
                    chain = self.mro(*here)
                    current = [i for i, (c, _) in enumerate(chain) if c is cls]
                    start = current[0] + 1 if current else 1
                    for c, m in chain[start:]:
                        defs = [n for n in c.body if isinstance(n, ast.FunctionDef) and n.name == f.attr]
                        if defs:
                            return defs[-1], c, m
            elif isinstance(f.value, ast.Name):
                bound = env.get(f.value.id)
                if isinstance(bound, tuple):
                    return self.method(bound[0], bound[1], f.attr)
                if f.value.id not in env:
                    node, m = self.lookup(f.value.id, module)
                    if isinstance(node, ast.ClassDef):
                        return self.method(node, m, f.attr)
        raise Unreadable(f"{self.root}: the parser is handed to {ast.unparse(f)} in {module}, not read")

    def register(self, e: ast.Call, env: dict, module: str, cls) -> None:
        strings: list[str] = []
        for a in e.args:
            got = self.expr(a.value if isinstance(a, ast.Starred) else a, env, module, cls)
            got = got if isinstance(a, ast.Starred) else [got]
            if not isinstance(got, list) or not all(isinstance(s, str) for s in got):
                raise Unreadable(f"{self.root}: option string {ast.unparse(a)} in {module}:{e.lineno}")
            strings += got
        strings = [s for s in strings if s.startswith("-")]
        if not strings:
            return  # a positional (model_tag)
        action, nargs = self.action(e, env, module, cls)
        registered = list(strings)
        shown = None
        if action in ("BooleanOptionalAction", "EnableDisableAction"):
            # argparse's BooleanOptionalAction: each --x followed by its --no-x; vLLM's EnableDisableAction (0.33.0+,
            # every BooleanOptionalAction) appends the --disable-x of an --enable-x (and back), and prints
            # (``_register_action``: ``visible_option_strings``) the given strings and those inverses only
            registered = [t for s in strings for t in ((s, "--no-" + s[2:]) if s.startswith("--") else (s,))]
            if self.inverse:
                inverses = [b + s[len(a):] for s in strings for a, b in (("--enable-", "--disable-"),
                                                                         ("--disable-", "--enable-"))
                            if s.startswith(a)]
                registered += inverses
                if inverses:
                    shown = "/".join([*strings, *inverses])
        code = "0" if action in NO_VALUE else nargs
        for s in registered:
            # the same string twice: both branches of an ``if`` (argparse would refuse a conflict at run time);
            # the first registration's place is kept, and the branches must agree on the words it takes
            if s in self.nargs and self.nargs[s] != code:
                raise Unreadable(f"{self.root}: {s} takes {self.nargs[s]} or {code} words ({module}:{e.lineno})")
            self.options[s] = None
            self.nargs[s] = code
            self.shown.setdefault(s, shown or "/".join(registered))

    def action(self, e: ast.Call, env: dict, module: str, cls) -> tuple[str | None, str]:
        """The action's name and the words it takes (``nargs`` as argparse reads it, ``"1"`` by default), from the
        call's keywords or, for ``**kwargs["field"]``, from what ``get_kwargs`` derives from the field's type and
        what the caller assigned or deleted."""
        given: dict[str, ast.expr] = {kw.arg: kw.value for kw in e.keywords if kw.arg}
        fk: FieldKwargs | None = None
        for kw in e.keywords:
            if kw.arg is None:
                got = self.expr(kw.value, env, module, cls)
                if not isinstance(got, FieldKwargs):
                    raise Unreadable(f"{self.root}: **{ast.unparse(kw.value)} in {module}:{e.lineno}")
                fk = got
        derived: dict[str, object] = {}
        if fk is not None:
            found = {n: (a, m) for n, a, m in self.fields_at(fk.of.cls, fk.of.module)}
            if fk.name not in found:
                raise Unreadable(f"{self.root}: {fk.of.cls.name} has no field {fk.name} ({module}:{e.lineno})")
            derived = self.field_kwargs(*found[fk.name])
            for key, value in {**fk.of.overrides.get(fk.name, {}), **fk.extra}.items():
                if value is DELETED:
                    derived.pop(key, None)
                elif key in ("action", "nargs"):
                    derived[key] = value
        merged: dict[str, object] = {**derived, **given}
        action = merged.get("action")
        name = _action_name(action) if isinstance(action, ast.expr) else action
        nargs = merged.get("nargs", "1")
        if isinstance(nargs, ast.expr):
            got = self.expr(nargs, env, module, cls)
            if not isinstance(got, (str, int)):
                raise Unreadable(f"{self.root}: nargs={ast.unparse(nargs)} in {module}:{e.lineno}")
            nargs = got
        return name, str(nargs)  # type: ignore[return-value]


def _is_super(e: ast.expr) -> bool:
    return isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and e.func.id == "super"


def _action_name(e: ast.expr) -> str | None:
    if isinstance(e, ast.Constant):
        return str(e.value)
    text = ast.unparse(e)
    return "BooleanOptionalAction" if text.endswith("BooleanOptionalAction") else text
