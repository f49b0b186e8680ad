"""Build the rehearsal pod's table of the long options each vLLM release's server parser has
(src/vllm_remedy/sim/vllm_pod/vllm_options.json), read by ``sim.vllm_pod.argv_options``.

The rehearsal must not share the tools' reading of vLLM (their table is built by parsing the sources' syntax tree), so
this one scans the text of each release's files with regular expressions:

* every string literal at the head of an ``add_argument(`` call that starts with ``--`` (engine/arg_utils.py and the
  file holding ``make_arg_parser``: entrypoints/openai/cli_args.py to 0.28, entrypoints/launchers/cli_args.py 0.29-0.32,
  entrypoints/common/cli_args.py from 0.33);
* from 0.10.0, the fields of the ``*FrontendArgs`` classes in that file (``FrontendArgs.add_cli_args`` registers
  ``--<field-name>`` for each), docstrings stripped first;
* the option strings of a call that registers several (``"--tensor-parallel-size", "-tp"``), joined as argparse
  names the action in its errors (``names``);
* from the first release whose ``FlexibleArgumentParser`` registers ``EnableDisableAction`` (0.33.0), the
  ``--enable-x``/``--disable-x`` options that are a BooleanOptionalAction, which get the inverse option string
  (``inverted``; ``sim_vllm_inverses.py``: not the store_true or valued ones);
* ``vllm serve``'s own: the ``serve`` sub-parser's ``add_argument`` calls (the section of vllm/scripts.py that builds it
  to 0.7.3, entrypoints/cli/serve.py from 0.8.0), which ``python -m vllm.entrypoints.openai.api_server`` lacks;
* the options registered ``action="store_true"`` (``store_true``; ``sim_vllm_inverses.py``): no ``--no-`` form;
* the top-level ``vllm`` parser's options and sub-commands (``cli``, by release; ``sim_vllm_cli.py``), whose usage
  argparse prints when it refuses ``vllm serve``'s leftovers.

A wheel's sources go under SRC/src-<release>/vllm (engine/arg_utils.py, entrypoints/, utils*, scripts.py), one per
release: ``python scripts/sim_vllm_options.py SRC``. The json keeps, per option, the spans of releases (indices into
``releases``, end exclusive) that have it, so the table stays small.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from sim_vllm_cli import cli  # scripts/ is on sys.path when this file runs
from sim_vllm_inverses import inverted, store_true

OUT = Path(__file__).resolve().parents[1] / "src/vllm_remedy/sim/vllm_pod/vllm_options.json"
_STR = r"""(?:"[^"\n]*"|'[^'\n]*')"""
_HEAD = re.compile(r"add_argument\(\s*((?:" + _STR + r"\s*,\s*)*" + _STR + ")")
_LIT = re.compile(_STR)
_DOC = re.compile(r'"""(?:.|\n)*?"""|' + r"'''(?:.|\n)*?'''")
_CLASS = re.compile(r"^class (\w*FrontendArgs)\b[^\n]*:\n((?:(?:    [^\n]*)?\n)*)", re.M)
_FIELD = re.compile(r"^    ([a-z_][a-z0-9_]*)\s*:", re.M)
_OPTION = re.compile(r"--[a-z0-9][a-z0-9-]*")
_ANY_OPTION = re.compile(r"--[a-z0-9][a-z0-9-]*|-[A-Za-z0-9][a-z0-9-]*")
#: ``for ... in [<literal list>]:`` and the four lines of its body
_LOOP = re.compile(r"for [\w, ]+ in [\[(]\n((?:[^\n]*\n)*?)\s*[\])]:\n((?:[^\n]*\n){1,4})")


def _version(name: str) -> tuple[int, ...]:
    return tuple(int(p) for p in name.split("."))


def _heads(text: str) -> list[str]:
    """The ``--x`` strings ``add_argument`` calls name before their first non-literal argument, in text order, and
    those of a literal list a loop hands to ``add_argument`` (``for arg, type in [("--guided-decoding-backend", str),
    ...]: group.add_argument(arg, ...)``, engine/arg_utils.py@0.11.0)."""
    found: list[tuple[int, str]] = []
    for match in _HEAD.finditer(text):
        found += [(match.start(), lit[1:-1]) for lit in _LIT.findall(match.group(1)) if _OPTION.fullmatch(lit[1:-1])]
    for match in _LOOP.finditer(text):
        if "add_argument(" in match.group(2):
            found += [(match.start(), lit[1:-1]) for lit in _LIT.findall(match.group(1))
                      if _OPTION.fullmatch(lit[1:-1])]
    return [word for _at, word in sorted(found)]


def _names(text: str) -> list[str]:
    """The option strings of each ``add_argument`` call that registers more than one (``"--tensor-parallel-size",
    "-tp"``), joined with "/" in the order written: argparse names the action so in its errors
    (``argument --tensor-parallel-size/-tp: expected one argument``)."""
    out = []
    for match in _HEAD.finditer(text):
        words = [lit[1:-1] for lit in _LIT.findall(match.group(1)) if _ANY_OPTION.fullmatch(lit[1:-1])]
        if len(words) > 1 and any(_OPTION.fullmatch(w) for w in words):
            out.append("/".join(words))
    return out


def _fields(text: str) -> list[str]:
    """``--<field>`` for each field of the ``*FrontendArgs`` classes (their add_cli_args turns each into an option)."""
    bare = _DOC.sub('""', text)
    return ["--" + f.replace("_", "-") for cls in _CLASS.finditer(bare) for f in _FIELD.findall(cls.group(2))]


def _parser_file(root: Path) -> Path:
    for where in ("common", "launchers", "openai"):
        path = root / f"entrypoints/{where}/cli_args.py"
        if path.is_file() and "def make_arg_parser" in path.read_text(encoding="utf-8"):
            return path
    raise SystemExit(f"{root}: no make_arg_parser")


def _serve_section(root: Path) -> str:
    """The text that builds the ``serve`` sub-parser before handing it to ``make_arg_parser``."""
    serve = root / "entrypoints/cli/serve.py"
    if serve.is_file():
        return serve.read_text(encoding="utf-8")
    text = (root / "scripts.py").read_text(encoding="utf-8")
    start = re.search(r"add_parser\(\s*[\"']serve[\"']", text)
    if start is None:
        raise SystemExit(f"{root}: no serve sub-parser")
    return text[start.start():text.index("make_arg_parser(serve_parser)", start.start())]


def named(root: Path) -> list[str]:
    """Every multi-string option of one release's server parser (``_names``), in the files ``scan`` reads."""
    parser = _parser_file(root).read_text(encoding="utf-8")
    return list(dict.fromkeys(_names(parser) + _names((root / "engine/arg_utils.py").read_text(encoding="utf-8"))
                              + _names(_serve_section(root))))


def scan(root: Path) -> tuple[list[str], list[str]]:
    """(options of make_arg_parser, options only the ``serve`` sub-parser adds) of one release's sources, in the order
    they are registered as far as text order tells it: ``make_arg_parser``'s own calls up to the one that hands the
    parser to ``FrontendArgs.add_cli_args`` (the rest of its file: the ``FrontendArgs`` fields), its calls up to
    ``AsyncEngineArgs.add_cli_args`` (engine/arg_utils.py, ``AsyncEngineArgs``'s own last), then its calls after that
    (``--max-log-len`` in 0.5.5's cli_args.py follows the engine's options)."""
    text = _parser_file(root).read_text(encoding="utf-8")
    start = text.index("def make_arg_parser")
    body = text[start:]
    fn = body[:body.index("\ndef ", 1) if "\ndef " in body[1:] else len(body)]
    rest = _heads(text.replace(body, "")) + _fields(text)
    engine = _heads((root / "engine/arg_utils.py").read_text(encoding="utf-8"))
    at = fn.find("EngineArgs.add_cli_args(")
    if at < 0:
        order = _heads(fn) + rest + engine
    else:
        front = fn.find("FrontendArgs.add_cli_args(")
        front = front if 0 <= front < at else at
        order = _heads(fn[:front]) + rest + _heads(fn[front:at]) + engine + _heads(fn[at:])
    common = list(dict.fromkeys(order))
    return common, [o for o in dict.fromkeys(_heads(_serve_section(root))) if o not in common]


def _spans(present: list[bool]) -> list[list[int]]:
    spans: list[list[int]] = []
    for i, here in enumerate(present):
        if here and (not spans or spans[-1][1] != i):
            spans.append([i, i + 1])
        elif here:
            spans[-1][1] = i + 1
    return spans


def main(src: Path) -> None:
    releases = sorted((p.name.removeprefix("src-") for p in src.glob("src-*") if (p / "vllm").is_dir()), key=_version)
    scanned = [scan(src / f"src-{r}" / "vllm") for r in releases]
    table: dict[str, object] = {"releases": releases}
    for key, part in (("options", 0), ("serve_only", 1)):
        order: dict[str, None] = {}  # the newest release's order first, then what older ones add
        for s in reversed(scanned):
            order.update(dict.fromkeys(s[part]))
        table[key] = {n: _spans([n in s[part] for s in scanned]) for n in order}
    # each release's own registration order, where it is not the table's (argparse lists an ambiguous prefix's matches
    # in the order the parser registered them): indices into ``options``, by release
    index = {n: i for i, n in enumerate(table["options"])}  # type: ignore[arg-type]
    table["order"] = {r: [index[n] for n in s[0]] for r, s in zip(releases, scanned, strict=True)
                      if [index[n] for n in s[0]] != sorted(index[n] for n in s[0])}
    names = [named(src / f"src-{r}" / "vllm") for r in releases]
    table["names"] = {n: _spans([n in s for s in names]) for n in dict.fromkeys(n for s in reversed(names) for n in s)}
    # FlexibleArgumentParser registers EnableDisableAction for BooleanOptionalAction (utils/argparse_utils.py@0.33.0):
    # an --enable-x BooleanOptionalAction then has --disable-x too, and the reverse; a store_true or valued
    # --enable-x/--disable-x gets none (``sim_vllm_inverses``)
    roots = [src / f"src-{r}" / "vllm" for r in releases]
    inverses = [inverted(root, _parser_file(root), _serve_section(root))
                if any("EnableDisableAction" in f.read_text(encoding="utf-8") for f in root.glob("utils*/*.py"))
                else [] for root in roots]
    table["inverted"] = {n: _spans([n in s for s in inverses])
                         for n in dict.fromkeys(n for s in reversed(inverses) for n in s)}
    stored = [store_true(root, _parser_file(root), _serve_section(root)) for root in roots]
    table["store_true"] = {n: _spans([n in s for s in stored]) for n in dict.fromkeys(n for s in reversed(stored)
                                                                                      for n in s)}
    table["cli"] = {r: cli(root) for r, root in zip(releases, roots, strict=True)}
    OUT.write_text(json.dumps(table, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"{OUT.name}: {len(releases)} releases, {len(table['options'])} options, "  # type: ignore[arg-type]
          f"{len(table['serve_only'])} serve-only, {OUT.stat().st_size} bytes")  # type: ignore[arg-type]


if __name__ == "__main__":
    main(Path(sys.argv[1]))
