#!/usr/bin/env python3
"""Write ``src/vllm_remedy/vllm/data/vllm_flags.json``: every option string of ``vllm serve``'s parser, per release,
read statically (AST) from vLLM's own source, so ``cmdline.unrecognized`` refuses exactly what each release refuses.

    python scripts/vllm_flags.py DIR [-o OUT]

DIR holds one extracted release per directory, ``src-<release>/vllm`` or ``<release>/vllm`` (a wheel unzipped: its
``vllm/**/*.py`` files). The walk is in ``vllm_flags_read.py``, the lookups it uses in ``vllm_flags_source.py``.

What it reads, per release, as vLLM builds the parser (nothing is imported or run):

* the ``serve`` subcommand: ``ServeSubcommand.subparser_init`` in entrypoints/cli/serve.py, or ``main`` in
  scripts.py before that file existed (0.5.5-0.7.2); only the parser ``subparsers.add_parser("serve")`` returns is
  followed, so the top-level ``vllm --version`` and the other subcommands' options stay out;
* every function that parser is handed to, followed through imports and class bases: ``make_arg_parser``
  (entrypoints/openai/cli_args.py, later entrypoints/launchers/ or entrypoints/common/cli_args.py),
  ``FrontendArgs.add_cli_args``, ``AsyncEngineArgs.add_cli_args``, ``EngineArgs.add_cli_args`` (engine/arg_utils.py);
* each ``add_argument`` call's option strings: literals, loop variables over literal lists (0.11.0's deprecated
  ``--guided-decoding-*`` loop) and the frontend dataclass loop (``for key, value in get_kwargs(cls).items()``:
  ``--<field name>`` for every field of the class and its bases, plus the ``flags`` a ``_customize_cli_kwargs``
  assigns);
* whether the action is ``BooleanOptionalAction`` (explicit ``action=``, or ``**kwargs["field"]`` from
  ``get_kwargs(Config)`` whose field is annotated ``bool``, unless the annotation is exactly ``bool | str | None``
  where that release's ``get_kwargs`` makes it ``nargs='?'``): it registers ``--no-x`` too, noted as an option
  string; from the release whose ``FlexibleArgumentParser`` registers ``EnableDisableAction`` (0.33.0) an
  ``--enable-x`` also registers ``--disable-x`` and the reverse;
* ``FlexibleArgumentParser`` (vllm/utils.py, utils/__init__.py, utils/argparse_utils.py): ``allow_abbrev`` (never set
  in a release read: argparse's default, a unique prefix resolves), whether ``parse_args`` folds ``--x.y`` keys into
  ``--x`` (dotted), whether it rewrites ``_`` to ``-`` in a long option's name (underscore: every release read) and
  ``-h``/``--help`` (argparse's ``add_help``);
* each action's words (``nargs``: ``"0"`` for store_true/store_false/BooleanOptionalAction/EnableDisableAction and
  argparse's other no-value actions, else the ``nargs=`` given or what ``get_kwargs`` derives from the field's type,
  in that release's branch order, after the caller's own assignments and ``del``; ``"1"``, the default, is not
  written), the option strings argparse prints for the action in an error (``shown``) and the registration order
  (``order``: an ambiguous prefix's matches are listed in it).

Both branches of an ``if`` are read (platform or ``--help`` conditions: an option either branch adds is kept, so a
claim of absence is never made for an option some run has). What it cannot read fails loudly (``Unreadable``):
an option string that is not a literal or a known loop value, a ``**kwargs`` whose field it cannot find, a function
the parser is handed to that it cannot resolve (except ``vllm_flags_read.HOOKS``: ``current_platform.
pre_register_and_update`` and the ``--help=`` filter, skipped only after checking that no definition of them in the
release calls ``add_argument``; ROCm's, from 0.31.0, sets an environment variable), a ``FlexibleArgumentParser`` that
sets ``allow_abbrev`` or a ``serve`` parser without ``-h``. Not read: options a general plugin
(``load_general_plugins``) or an out-of-tree platform adds at run time.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from vllm_flags_read import Release  # scripts/ is on sys.path when this file runs


def _version(name: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", name))


def spans(indices: list[int]) -> list[list[int]]:
    """Sorted indices as inclusive [first, last] runs: [0, 1, 2, 5] -> [[0, 2], [5, 5]]."""
    out: list[list[int]] = []
    for i in indices:
        if out and out[-1][1] == i - 1:
            out[-1][1] = i
        else:
            out.append([i, i])
    return out


def generate(src: Path) -> dict:
    """The table for every release under ``src``, oldest first."""
    found = {}
    for d in src.iterdir():
        m = re.fullmatch(r"(?:src-)?(\d+\.\d+\.\d+)", d.name)
        if m and (d / "vllm").is_dir():
            found[m.group(1)] = d / "vllm"
    releases = sorted(found, key=_version)
    per: dict[str, list[int]] = {}
    nargs: dict[str, dict[str, list[int]]] = {}
    shown: dict[str, list[int]] = {}
    orders: list[list[str]] = []
    parser: dict[str, list[int]] = {"allow_abbrev": [], "dotted": [], "enable_disable_inverse": [],
                                     "underscore": []}
    for i, release in enumerate(releases):
        r = Release(found[release])
        r.read()
        for option in r.options:
            per.setdefault(option, []).append(i)
            if r.nargs[option] != "1":
                nargs.setdefault(r.nargs[option], {}).setdefault(option, []).append(i)
        for group in dict.fromkeys(r.shown.values()):
            if "/" in group:
                shown.setdefault(group, []).append(i)
        orders.append(list(r.options))
        for key, on in (("allow_abbrev", r.abbrev), ("dotted", r.dotted), ("enable_disable_inverse", r.inverse),
                        ("underscore", r.underscore)):
            if on:
                parser[key].append(i)
        print(f"{release}: {len(r.options)} option strings", file=sys.stderr)
    return {
        "about": "vllm serve's option strings per release, read from vLLM's source by scripts/vllm_flags.py; "
                 "spans are inclusive [first, last] indices into releases",
        "releases": releases,
        "parser": {k: spans(v) for k, v in parser.items()},
        "options": {o: spans(per[o]) for o in sorted(per)},
        "nargs": {code: {o: spans(v) for o, v in sorted(opts.items())} for code, opts in sorted(nargs.items())},
        "shown": {g: spans(v) for g, v in sorted(shown.items())},
        "order": registration_order(orders),
    }


def registration_order(orders: list[list[str]]) -> dict[str, object]:
    """Each release's registration order (argparse lists an ambiguous prefix's matches in it), compactly: one order
    of every option string (the newest release's, older strings slotted after the string they follow), and per
    release the strings it registers elsewhere, each with the string it follows there, flat as indices into that
    order (``[moved, follows, moved, follows...]``, -1: first, so the table stays small to load). A release's
    order is its strings in the shared order, the longest run that agrees kept, then each moved string put right
    after the one it follows, in that release's order (``release_flags.order``)."""
    merged: list[str] = []
    for order in reversed(orders):
        for k, o in enumerate(order):
            if o not in merged:
                after = next((p for p in reversed(order[:k]) if p in merged), None)
                merged.insert(merged.index(after) + 1 if after is not None else 0, o)
    rank = {o: n for n, o in enumerate(merged)}
    moves: dict[str, list[int]] = {}
    for i, order in enumerate(orders):
        keep = _increasing(order, rank)
        moved = [n for k, o in enumerate(order) if o not in keep for n in (rank[o], rank[order[k - 1]] if k else -1)]
        if moved:
            moves[str(i)] = moved
    return {"all": merged, "moved": moves}


def _increasing(order: list[str], rank: dict[str, int]) -> set[str]:
    """The longest subsequence of ``order`` already in ``rank``'s order (patience sorting)."""
    tails: list[int] = []  # index into order of the smallest tail of each length
    prev: list[int | None] = [None] * len(order)
    for k, o in enumerate(order):
        lo, hi = 0, len(tails)
        while lo < hi:
            mid = (lo + hi) // 2
            if rank[order[tails[mid]]] < rank[o]:
                lo = mid + 1
            else:
                hi = mid
        prev[k] = tails[lo - 1] if lo else None
        if lo == len(tails):
            tails.append(k)
        else:
            tails[lo] = k
    out: set[str] = set()
    k = tails[-1] if tails else None
    while k is not None:
        out.add(order[k])
        k = prev[k]
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("src", type=Path, help="directory of extracted releases (src-<release>/vllm)")
    ap.add_argument("-o", "--out", type=Path,
                    default=Path(__file__).resolve().parent.parent / "src/vllm_remedy/vllm/data/vllm_flags.json")
    args = ap.parse_args(argv)
    table = generate(args.src)
    text = json.dumps(table, separators=(",", ":"))
    # one option a line: reviewable diffs, still compact
    text = text.replace('"options":{', '"options":{\n').replace("]],", "]],\n")
    args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
