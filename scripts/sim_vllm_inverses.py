"""Which ``--enable-x``/``--disable-x`` options get an inverse option string, for the rehearsal's table
(``sim_vllm_options.py``): read with regular expressions over the text, like the rest of that table, never with the
tools' syntax-tree reading.

From 0.33.0 vLLM's ``FlexibleArgumentParser`` registers ``EnableDisableAction`` in place of argparse's
``BooleanOptionalAction`` (utils/argparse_utils.py@0.33.0 and @0.34.0: ``self.register("action",
BooleanOptionalAction, EnableDisableAction)``), and that action appends ``--disable-x`` to an ``--enable-x`` (and the
reverse). Only a BooleanOptionalAction gets it: ``--disable-log-stats`` is ``action="store_true"``
(engine/arg_utils.py@0.33.0 l.1920) and ``--disable-access-log-for-endpoints`` takes a value (``str | None``,
entrypoints/common/cli_args.py@0.33.0 l.321), so neither has an ``--enable-`` form and argparse leaves
``--enable-log-stats`` over (``unrecognized arguments``). An ``add_argument`` call is a BooleanOptionalAction when it
says so (``action=argparse.BooleanOptionalAction``) or spreads ``**<x>_kwargs["field"]`` from ``get_kwargs(Config)``
whose field is annotated with ``bool`` (engine/arg_utils.py@0.33.0 ``get_kwargs``: ``contains_type(type_hints,
bool)``), except exactly ``bool | str | None`` (``nargs='?'``); a ``*FrontendArgs`` field likewise
(``FrontendArgs.add_cli_args`` runs the same ``get_kwargs``). What cannot be classified fails loudly.

``store_true`` lists, per release, the options an ``add_argument`` call registers with ``action="store_true"`` (every
release read: engine/arg_utils.py@0.5.5 ``--enforce-eager``, entrypoints/cli/serve.py@0.34.0 ``--headless``): argparse
names such an action ``--x`` alone in its errors and has no ``--no-x`` for it, where a BooleanOptionalAction is
``--x/--no-x``. In every release read the option strings of such a call are literals at its head, and no other
action of the server parser is store_true (``frontend_kwargs[...]["action"] = "store_true"`` appears only in
entrypoints/openai/run_batch.py@0.17.0 and later, another parser).
"""

from __future__ import annotations

import re
from pathlib import Path

_STRING = re.compile(r"\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*'")
_HEAD = re.compile(r"add_argument\(\s*((?:(?:\"[^\"\n]*\"|'[^'\n]*')\s*,\s*)*)")
_ACTION_SET = re.compile(r"\[[\"'](\w+)[\"']\]\[[\"']action[\"']\]\s*=")
_KWARGS_OF = re.compile(r"(\w+)\s*=\s*get_kwargs\((\w+)\)")
_SPREAD = re.compile(r"\*\*(\w+)\[\s*[\"'](\w+)[\"']\s*\]")
_CLASS = re.compile(r"^class (\w+)\b[^\n]*:\n((?:(?:[ \t][^\n]*)?\n)*)", re.M)
_FIELD = re.compile(r"^    ([a-z_][a-z0-9_]*)\s*:\s*([^=\n]+?)\s*(?:=[^\n]*)?$", re.M)
_DOC = re.compile(r'"""(?:.|\n)*?"""|' + r"'''(?:.|\n)*?'''")
_PREFIXES = ("--enable-", "--disable-")


def _calls(text: str) -> list[str]:
    """The text of each ``add_argument(...)`` call, up to its closing parenthesis (string literals skipped)."""
    out = []
    for match in re.finditer(r"add_argument\(", text):
        depth, at = 1, match.end()
        while depth and at < len(text):
            if text[at] in "\"'":
                lit = _STRING.match(text, at)
                at = lit.end() if lit else at + 1
                continue
            depth += {"(": 1, ")": -1}.get(text[at], 0)
            at += 1
        out.append(text[match.start():at])
    return out


def _is_bool(annotation: str) -> bool:
    """``get_kwargs``' test: a ``bool`` among the types makes a BooleanOptionalAction, unless the annotation is
    exactly ``bool | str | None`` (``nargs='?'``: a bare flag or a value)."""
    words = set(re.findall(r"\w+", annotation)) - {"Optional", "Union"}
    return "bool" in words and words != {"bool", "str", "None"}


def _fields(files: list[Path]) -> dict[str, dict[str, str]]:
    """Each class's fields and their annotations, by class name (docstrings blanked first)."""
    out: dict[str, dict[str, str]] = {}
    for path in files:
        bare = _DOC.sub('""', path.read_text(encoding="utf-8"))
        for cls in _CLASS.finditer(bare):
            out.setdefault(cls.group(1), {}).update(_FIELD.findall(cls.group(2)))
    return out


def _annotation(fields: dict[str, dict[str, str]], cls: str, field: str, where: str) -> str:
    """``cls.field``'s annotation; a field the class inherits: the one annotation every class that has it agrees on."""
    if field in fields.get(cls, {}):
        return fields[cls][field]
    found = {f[field] for f in fields.values() if field in f}
    if len({_is_bool(a) for a in found}) != 1:
        raise SystemExit(f"{where}: cannot tell {cls}.{field}'s type ({sorted(found)})")
    return found.pop()


_STORE_TRUE = re.compile(r"\baction\s*=\s*[\"']store_true[\"']")


def store_true(root: Path, parser_file: Path, serve_text: str) -> list[str]:
    """The long option strings one release registers with ``action="store_true"``, in the files the option scan reads
    (engine/arg_utils.py, the file of ``make_arg_parser``, the ``serve`` sub-parser's own calls)."""
    found: list[str] = []
    for text in ((root / "engine/arg_utils.py").read_text(encoding="utf-8"), parser_file.read_text(encoding="utf-8"),
                 serve_text):
        for call in _calls(text):
            head = _HEAD.match(call)
            if head is not None and _STORE_TRUE.search(call):
                found += [lit[1:-1] for lit in _STRING.findall(head.group(1)) if lit[1:-1].startswith("--")]
    return list(dict.fromkeys(found))


def inverted(root: Path, parser_file: Path, serve_text: str) -> list[str]:
    """The ``--enable-x``/``--disable-x`` option strings one release registers with a BooleanOptionalAction (they get
    an inverse where ``EnableDisableAction`` is registered), in the files the option scan reads."""
    config = sorted((root / "config").glob("**/*.py")) if (root / "config").is_dir() else [root / "config.py"]
    fields = _fields([*config, parser_file])
    found: list[str] = []
    for name, text in (("engine/arg_utils.py", (root / "engine/arg_utils.py").read_text(encoding="utf-8")),
                       (parser_file.name, parser_file.read_text(encoding="utf-8")), ("serve", serve_text)):
        kwargs_of = dict(_KWARGS_OF.findall(text))
        for call in _calls(text):
            head = _HEAD.match(call)
            options = [lit[1:-1] for lit in _STRING.findall(head.group(1) if head else "")
                       if lit[1:-1].startswith(_PREFIXES)]
            if not options:
                continue
            if "BooleanOptionalAction" in call:
                found += options
            elif (spread := _SPREAD.search(call)) is not None and "action=" not in call:
                cls = kwargs_of.get(spread.group(1))
                if cls is None:
                    raise SystemExit(f"{root}/{name}: {spread.group(0)} comes from no get_kwargs(...) read")
                if _is_bool(_annotation(fields, cls, spread.group(2), f"{root}/{name}")):
                    found += options
    # FrontendArgs.add_cli_args: --<field> for every field, through get_kwargs, unless _customize_cli_kwargs sets
    # the field's action itself (``frontend_kwargs["middleware"]["action"] = "append"``, cli_args.py@0.33.0)
    own_action = set(_ACTION_SET.findall(parser_file.read_text(encoding="utf-8")))
    for cls, own in fields.items():
        if cls.endswith("FrontendArgs"):
            found += [o for f, a in own.items() if _is_bool(a) and f not in own_action
                      and (o := "--" + f.replace("_", "-")).startswith(_PREFIXES)]
    return list(dict.fromkeys(found))
