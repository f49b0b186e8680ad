"""Whether a release's server parser has a long option: argparse's own lookup of a ``--word``, on the rehearsal's table.

The table (``vllm_options.json``) is the rehearsal's own, built by scripts/sim_vllm_options.py with regular expressions
over each release's wheel (the option strings of every ``add_argument`` call in engine/arg_utils.py and in the file of
``make_arg_parser``, the fields of its ``FrontendArgs`` dataclasses, and what the ``serve`` sub-parser adds); the tools'
table (``vllm/data/vllm_flags.json``) is read from the syntax tree and is not used here, so the two can catch each
other's mistakes. Loaded on first use. From 0.33.0 it also lists the ``--enable-x``/``--disable-x`` options that are
a BooleanOptionalAction (``inverted``), the only ones EnableDisableAction gives an inverse (``inverse``); per release
the options registered ``action="store_true"`` (``store_true``: no ``--no-`` form) and the top-level ``vllm`` parser's
options and sub-commands (``cli``).

argparse (CPython 3.12 ``_parse_optional``, the same for long options in 3.10) reads a word that starts with ``--``:
an exact option string, else the part before ``=``, else every option string that starts with that part
(``allow_abbrev``: vLLM's FlexibleArgumentParser never turns it off, no release read sets it): one is that option,
several are ``ambiguous option: --x could match --a, --b`` at once, none leaves the word over for ``unrecognized
arguments`` at the end. FlexibleArgumentParser first writes the name's underscores as dashes (every release read) and,
from 0.9.0, folds a dotted ``--x.k v`` into ``--x '{"k": v}'`` (utils.py@0.9.0 ``startswith("--") and "." in``), so a
dotted word is that option from 0.9.0 and an unknown word before (``--hf-overrides.num-hidden-layers``).

A single-dash word (``-tp``, ``-xyz``) reaches argparse as written: FlexibleArgumentParser rewrites only ``-O...``
(from 0.12.0) and folds dotted ``-x.k`` (utils/argparse_utils.py@0.34.0 ``parse_args``), both read in ``argv``'s
``unknown_shorts``, not here. argparse (CPython 3.12 ``_parse_optional``/``_get_option_tuples``) takes an exact option
string, else the part before ``=``, else every option string equal to the word's first two characters (``-qfp8``:
``-q`` with ``fp8``) or starting with the word's part before ``=`` (``allow_abbrev``), in registration order: one is
that option, several are ``ambiguous option: -d could match -dcp, -dp, ...``, none leaves the word over
(``unrecognized arguments: -xyz``). A negative number (``-1``) or a word with a space is a positional. The single-dash
option strings are the table's ``names`` rows (``--tensor-parallel-size/-tp``) plus argparse's ``-h``, each placed
where its long option was registered.
"""

from __future__ import annotations

import functools
import json
import re
from importlib import resources
from typing import Any

Version = tuple[int, int, int]
#: FlexibleArgumentParser folds ``--x.k v`` into ``--x <json>`` (utils.py@0.9.0; 0.8.5's parse_args has no such step).
DOTTED_SINCE: Version = (0, 9, 0)
#: argparse's ``_negative_number_matcher`` (CPython 3.12): such a word is a positional when no option looks like one.
_NEGATIVE = re.compile(r"^-\d+$|^-\d*\.\d+$")


@functools.cache
def _raw() -> dict[str, object]:
    return json.loads(resources.files(__package__).joinpath("vllm_options.json").read_text(encoding="utf-8"))


@functools.cache
def _table() -> tuple[tuple[Version, ...], dict[str, list[list[int]]], dict[str, list[list[int]]],
                      dict[str, list[list[int]]]]:
    raw: Any = _raw()
    releases = tuple(tuple(int(p) for p in r.split(".")) for r in raw["releases"])
    return releases, raw["options"], raw["serve_only"], raw["inverted"]  # type: ignore[return-value]


def _rows(version: Version) -> tuple[int, ...]:
    """The table's releases that speak for ``version``: itself when read, else the read ones on either side (an
    option neither has is taken as absent in between); none before the oldest read (not judged)."""
    releases = _table()[0]
    if version < releases[0]:
        return ()
    if version in releases:
        return (releases.index(version),)
    before = max(i for i, r in enumerate(releases) if r < version)
    return (before,) if before == len(releases) - 1 else (before, before + 1)


def _has(spans: list[list[int]] | None, rows: tuple[int, ...]) -> bool:
    return any(lo <= row < hi for lo, hi in spans or () for row in rows)


@functools.cache
def options(version: Version, serve: bool) -> tuple[str, ...]:
    """Every long option string of ``version``'s parser (``vllm serve``'s, else the api_server module's), in the order
    that release registers them (the table's, or its ``order`` row; between two read releases the older one's), with
    argparse's own ``--help``; empty when the release is older than the table."""
    rows = _rows(version)
    if not rows:
        return ()
    _r, common, serve_only, inverted = _table()
    found = [name for name, spans in common.items() if _has(spans, rows)]
    own = _raw()["order"].get(".".join(map(str, _table()[0][rows[0]])))  # type: ignore[attr-defined]
    if own is not None:  # that release registered them in another order than the table's
        names_ = list(common)
        found = [names_[i] for i in own] + [n for n in found if n not in {names_[i] for i in own}]
    if serve:
        found += [name for name, spans in serve_only.items() if _has(spans, rows)]
    # EnableDisableAction (from 0.33.0) gives a BooleanOptionalAction --enable-x its --disable-x, and the reverse,
    # registered with it, so listed beside it; a store_true or valued one has none (``inverse``)
    found = [w for n in found for w in (n, *((inverse_of(n),) if _has(inverted.get(n), rows) else ()))]
    return ("--help", *dict.fromkeys(found))


def inverse_of(option: str) -> str:
    """``--enable-x`` for ``--disable-x`` and the reverse (EnableDisableAction's ``_inverse_prefixes``)."""
    a, b = ("--enable-", "--disable-") if option.startswith("--enable-") else ("--disable-", "--enable-")
    return b + option.removeprefix(a)


def inverse(flag: str, version: Version) -> str | None:
    """The option string ``version``'s EnableDisableAction appends to ``--flag`` (``--disable-lora`` for
    ``--enable-lora`` from 0.33.0), None where it appends none: only a BooleanOptionalAction gets one
    (utils/argparse_utils.py@0.33.0 ``EnableDisableAction``, registered for BooleanOptionalAction), so store_true
    ``--disable-log-stats`` (engine/arg_utils.py@0.33.0 l.1920) and valued ``--disable-access-log-for-endpoints``
    (entrypoints/common/cli_args.py@0.33.0 l.321) have no ``--enable-`` form: argparse leaves ``--enable-log-stats``
    over."""
    return inverse_of(f"--{flag}") if _has(_table()[3].get(f"--{flag}"), _rows(version)[:1]) else None


def store_true(flag: str, version: Version) -> bool:
    """Whether ``version``'s parser registers ``--flag`` with ``action="store_true"`` (the table's ``store_true`` row;
    between two read releases the older one's, past the newest the newest's): argparse names its action ``--flag``
    alone and has no ``--no-flag``. False for a release older than the table."""
    return _has(_raw()["store_true"].get(f"--{flag}"), _rows(version)[:1])  # type: ignore[attr-defined]


def cli(version: Version | None) -> tuple[list[str], list[str]]:
    """The top-level ``vllm`` parser's option strings (``-h`` first) and sub-commands in ``version`` (the table's
    ``cli`` row; between two read releases the older one's, None or past the newest the newest's, before the oldest
    the oldest's)."""
    raw: Any = _raw()
    releases = _table()[0]
    rows = _rows(version) if version is not None else (len(releases) - 1,)
    options, commands = raw["cli"][".".join(map(str, releases[rows[0] if rows else 0]))]
    return list(options), list(commands)


@functools.cache
def names(flag: str, version: Version) -> str:
    """``--flag``'s option strings as argparse joins them to name the action in its errors
    (``--tensor-parallel-size/-tp``; ``--gpu-memory-utilization/--device-memory-utilization`` from 0.31.0): the
    table's ``names`` row for ``version`` (the older neighbour between two read releases), else ``--flag`` alone."""
    rows = _rows(version)
    return next((joined for joined, spans in _raw()["names"].items()
                 if f"--{flag}" in joined.split("/") and _has(spans, rows[:1])), f"--{flag}")


def dashed(word: str) -> str:
    """The word as FlexibleArgumentParser hands it to argparse: the name's underscores as dashes (a single-dash word
    as written)."""
    if not word.startswith("--"):
        return word
    key, eq, value = word.partition("=")
    return "--" + key[2:].replace("_", "-") + eq + value


@functools.cache
def shorts(version: Version, serve: bool) -> tuple[str, ...]:
    """Every single-dash option string of ``version``'s parser in registration order: argparse's ``-h``, then each
    of the ``names`` rows' (the older neighbour's between two read releases) where its long option stands in
    :func:`options`; empty when the release is older than the table."""
    known = options(version, serve)
    rows = _rows(version)[:1]
    at = {o: i for i, o in enumerate(known)}
    found = []
    for joined, spans in _raw()["names"].items():  # type: ignore[attr-defined]
        parts = joined.split("/")
        first = next((p for p in parts if p in at), None)
        if first is not None and _has(spans, rows):
            found += [(at[first], p) for p in parts if not p.startswith("--")]
    return ("-h", *dict.fromkeys(p for _i, p in sorted(found))) if known else ()


def _short(word: str, version: Version, serve: bool) -> tuple[str, ...] | None:
    """:func:`_lookup` of a single-dash word (the module's docstring), or None where argparse does not read it as an
    option here or ``argv.unknown_shorts`` reads it (``-O...``, ``-cc...``, a dotted key)."""
    known = shorts(version, serve)
    head = word.partition("=")[0]
    if not known or len(word) < 2 or " " in word or _NEGATIVE.match(word) or word.startswith(("-O", "-cc")) \
            or "." in head:
        return None
    if word in known or head in known:
        return (head,)
    return tuple(o for o in known if o == word[:2] or o.startswith(head))


def _lookup(word: str, version: Version, serve: bool) -> tuple[str, ...] | None:
    """The option strings ``word`` names (one: that option; several: ambiguous; none: unknown), or None when argparse
    does not read it as an option here (no ``--`` name, a space in it, a release older than the table) or the word is
    the ``--no-`` form of an option that is not ``store_true`` (a BooleanOptionalAction's, as far as the table tells).
    """
    if word.startswith("-") and not word.startswith("--"):
        return _short(word, version, serve)
    known = options(version, serve)
    if not known or not word.startswith("--") or word == "--" or " " in word:
        return None
    key = dashed(word).partition("=")[0]
    if "." in key and version >= DOTTED_SINCE:
        key = key.partition(".")[0]  # folded into ``--x <json>``: the option is ``--x``
        return (key,) if key in known else tuple(o for o in known if o.startswith(key))
    if key in known:
        return (key,)
    targets = [o for o in known if key.startswith("--no-") and o.startswith(f"--{key[5:]}")]
    if targets and not all(store_true(o[2:], version) for o in targets):
        return None  # a BooleanOptionalAction's --no-x (or its abbreviation): the table holds no --no- forms
    # (a store_true --x has no --no-x: ``--no-headless`` is an unknown word, as argparse leaves it over)
    return tuple(o for o in known if o.startswith(key))


def folded(word: str, version: Version) -> tuple[str, list[str], str | None] | None:
    """A dotted ``--x.a.b[=v]`` as FlexibleArgumentParser folds it from 0.9.0: (``--x``, the keys, the text after
    ``=`` or None); None for any other word. 0.9.0 dashes the whole name, keys too (utils.py@0.9.0); from 0.9.2 only
    the part before the first dot (utils/__init__.py@0.9.2 ``(?<=--)[^\\.]*``)."""
    if version < DOTTED_SINCE or not word.startswith("--"):
        return None
    key, eq, value = word.partition("=")
    if "." not in key:
        return None
    name, *keys = (dashed(key) if version < (0, 9, 2) else dashed(key.partition(".")[0]) + "." + key.partition(".")[2]
                   ).split(".")
    return name, keys, value if eq else None


def newest() -> Version:
    """The newest release the table was read from."""
    return _table()[0][-1]


def ever(word: str) -> bool:
    """Whether any release of the table registers the option ``word`` names exactly (its name as argparse sees it:
    dashes, up to any ``.``; a ``--no-x`` of a BooleanOptionalAction ``--x`` counts as ``--x``'s)."""
    key = dashed(word).partition("=")[0].partition(".")[0]
    _r, common, serve_only, _i = _table()
    every = {*common, *serve_only, "-h", *(p for joined in _raw()["names"] for p in joined.split("/"))}
    return key in every or (key.startswith("--no-") and f"--{key[5:]}" in every)


def unmodelled(word: str, version: Version, serve: bool = True) -> bool:
    """Whether ``word`` is an option a release past the table (``version``: the newest read, whose parser it
    extends) may have added: the newest read parser leaves it over and no release read ever had it. The rehearsal
    starts with it (``argv_added.unmodelled``)."""
    return unknown(word, version, serve) and not ever(word)


def unknown(word: str, version: Version, serve: bool = True) -> bool:
    """Whether argparse leaves ``word`` (an option as written) over: ``version``'s parser has no option it names."""
    return _lookup(word, version, serve) == ()


def ambiguous(word: str, version: Version, serve: bool = True) -> str | None:
    """argparse's message when ``word`` abbreviates several options (``ambiguous option: --max-num could match
    --max-num-seqs, --max-num-batched-tokens``), else None. The matches are listed in the table's order (the order the
    scan met them in the sources), which stands for the parser's registration order."""
    found = _lookup(word, version, serve)
    if found is None or len(found) < 2:
        return None
    return f"ambiguous option: {dashed(word)} could match {', '.join(found)}"
