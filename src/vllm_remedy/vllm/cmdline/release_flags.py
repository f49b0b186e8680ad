"""Each read release's own ``vllm serve`` option strings, and how its argparse resolves a written option against them.

``data/vllm_flags.json`` is written by ``scripts/vllm_flags.py`` from vLLM's source (43 releases, 0.5.5 to 0.34.0):
every option string its ``serve`` parser registers (``--x``, ``--no-x`` of a BooleanOptionalAction, ``--disable-x``
of an ``--enable-x`` from 0.33.0, ``-tp``, ``-h``), per release, as spans over the ordered list of releases read,
plus the parser's own behaviour per release (``allow_abbrev``: a unique prefix resolves; ``dotted``: ``--x.y`` is
folded into ``--x`` before argparse sees it). Per option string and release it also holds the words the option takes
(``nargs``: ``"0"`` for store_true, BooleanOptionalAction and the like, ``"?"``, ``"+"``; one word when not listed),
its action's option strings as argparse prints them in an error (``shown``: ``--x/--no-x``) and the registration
order (``order``: argparse lists an ambiguous prefix's matches in it). It decides whether a release has an option
and how many words it takes there; the union table (``table``) only where no release read reaches.

Read lazily, once, with the stdlib: only a check that meets an option to judge pays for it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from enum import Enum
from functools import cache
from importlib import resources

Version = tuple[int, int, int]
_PLAIN = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)(\.post\d+|\.\d+)?$")


class Verdict(str, Enum):
    """What the release's argparse makes of a written option."""

    KNOWN = "known"  # an option string, exactly or as its only prefix
    UNKNOWN = "unknown"  # no option string: ``unrecognized arguments``
    AMBIGUOUS = "ambiguous"  # the prefix of several: ``ambiguous option``
    NOT_JUDGED = "not judged"  # a release not read and not between two read ones (or a dev/rc build)


@dataclass(frozen=True)
class Parser:
    """One release's (or two neighbouring read releases', merged) option strings and parser behaviour."""

    options: frozenset[str]
    abbrev: bool
    dotted: bool
    exact: bool  # a read release (False: merged neighbours, the claim is an inference)
    index: int = -1  # its place in ``releases()`` (a read release)


@cache
def _data() -> dict:
    return json.loads(resources.files("vllm_remedy.vllm").joinpath("data", "vllm_flags.json").read_text("utf-8"))


@cache
def _table() -> tuple[tuple[Version, ...], dict, dict[str, list[list[int]]]]:
    data = _data()
    releases = tuple(tuple(int(p) for p in r.split(".")) for r in data["releases"])
    return releases, data["parser"], data["options"]  # type: ignore[return-value]


@cache
def _extra() -> tuple[dict[str, dict[str, list[list[int]]]], dict[str, list[list[int]]], dict]:
    data = _data()
    return data["nargs"], data["shown"], data["order"]


@cache
def _nargs(i: int) -> dict[str, str]:
    """Read release ``i``'s option strings and the words each takes."""
    table = dict.fromkeys(_read(i).options, "1")
    for code, opts in _extra()[0].items():
        table.update((o, code) for o, s in opts.items() if _inside(s, i))
    return table


@cache
def _shown(i: int) -> dict[str, str]:
    return {o: g for g, s in _extra()[1].items() if _inside(s, i) for o in g.split("/")}


@cache
def _neighbours(v: Version) -> tuple[int, ...]:
    """The read release ``v`` is, or the two read ones it lies between; () outside the releases read."""
    read = releases()
    return (read.index(v),) if v in read else _between(v)


def _between(v: Version) -> tuple[int, ...]:
    """The two read releases around ``v`` (the lower one may be ``v`` itself: 0.10.1.1 after 0.10.1); () when ``v``
    is older than the oldest read or not older than the newest."""
    read = releases()
    below = [i for i, r in enumerate(read) if r <= v]
    if not below or v >= read[-1]:
        return ()
    return below[-1], below[-1] + 1


def _agreed(v: Version, lookup, key: str) -> str | None:
    """What the release's (or both neighbours', when they agree or only one has ``key``) table says of ``key``."""
    at = _neighbours(v)
    if len(at) == 1:
        return lookup(at[0]).get(key)
    found = {got for i in at if (got := lookup(i).get(key)) is not None}
    return found.pop() if len(found) == 1 else None


def nargs(option: str, v: Version) -> str | None:
    """The words ``option`` (an exact option string) takes in release ``v``: ``"0"``, ``"1"``, ``"?"``, ``"+"``,
    ``"*"`` or a count; None where no release read says (or two neighbours disagree)."""
    return _agreed(v, _nargs, option)


def prefixed(prefix: str, v: Version) -> str | None:
    """The one option string of release ``v`` (both neighbours: the same one) that ``prefix`` abbreviates."""
    found = set()
    for i in _neighbours(v):
        matches = [o for o in _read(i).options if o.startswith(prefix)]
        found.add(matches[0] if len(matches) == 1 else None)
    return found.pop() if len(found) == 1 else None


def shown(option: str, v: Version) -> str | None:
    """``option``'s action's option strings as release ``v``'s argparse names it in an error (``--x/--no-x``;
    ``--enable-x/--disable-x`` from 0.33.0, whose ``--no-enable-x`` is hidden); None where no release read says."""
    if _neighbours(v) and all(option in _read(i).options for i in _neighbours(v)):
        return _agreed(v, _shown, option) or option
    return None


@cache
def _order(i: int) -> dict[str, int]:
    """Release ``i``'s registration order as ranks: the shared order, its moved strings put back after the string
    each follows in that release (``scripts/vllm_flags.py``: ``registration_order``)."""
    order = _extra()[2]
    every, mine = order["all"], _read(i).options
    moved = order["moved"].get(str(i), [])
    away = {every[n] for n in moved[::2]}
    out = [o for o in every if o in mine and o not in away]
    for n, after in zip(moved[::2], moved[1::2], strict=True):
        out.insert(out.index(every[after]) + 1 if after >= 0 else 0, every[n])
    return {o: n for n, o in enumerate(out)}


def releases() -> tuple[Version, ...]:
    """The releases read, oldest first."""
    return _table()[0]


def _inside(spans: list[list[int]], i: int) -> bool:
    return any(a <= i <= b for a, b in spans)


@cache
def _read(i: int) -> Parser:
    _, parser, options = _table()
    return Parser(frozenset(o for o, s in options.items() if _inside(s, i)), _inside(parser["allow_abbrev"], i),
                  _inside(parser["dotted"], i), True, i)


@cache
def parser_for(version: str | None) -> Parser | None:
    """The parser ``version`` runs: a read release's own; for a release between two read ones (0.8.4, 0.9.1,
    0.10.1.1) the two neighbours merged, so an option either has is taken as present (abbreviations and dotted keys
    as lenient); None for a dev/rc build, a release older than the oldest or newer than the newest read."""
    match = _PLAIN.match((version or "").strip())
    if not match:
        return None
    v = (int(match.group(1)), int(match.group(2)), int(match.group(3)))
    if v in releases() and not match.group(4):
        return _read(releases().index(v))
    if not (around := _between(v)):
        return None
    lo, hi = (_read(i) for i in around)
    return Parser(lo.options | hi.options, lo.abbrev or hi.abbrev, lo.dotted or hi.dotted, False)


def newest() -> Parser:
    """The newest read release's parser: a release newer than it keeps its options, as far as anyone can say."""
    return _read(len(releases()) - 1)


def every() -> frozenset[str]:
    """Every option string some read release registers."""
    return frozenset(_table()[2])


def ever(spelled: str) -> bool:
    """Whether some read release registers the option written ``spelled`` (the name argparse sees: underscores as
    dashes, up to any ``.``) exactly: a name the newest lacks was then removed, not added later."""
    base = spelled.partition("=")[0].partition(".")[0]
    name = "--" + base[2:].replace("_", "-") if base.startswith("--") else base
    return name in every()


def judge(spelled: str, parser: Parser) -> tuple[Verdict, tuple[str, ...]]:
    """What ``parser`` makes of an option written ``spelled`` (the token before any ``=``), with the option strings
    an ambiguous prefix matches.

    As vLLM reads it: ``FlexibleArgumentParser.parse_args`` rewrites ``_`` to ``-`` in a long name (up to the first
    ``.``) and, where ``dotted``, folds ``--x.y`` into ``--x``; argparse (CPython 3.12 ``_parse_optional``) then takes
    an exact option string, else, with ``allow_abbrev``, the one option string it prefixes; a short option also
    matches an option string equal to its first two characters (``-qfp8``: ``-q`` with ``fp8``). Several matches are
    listed in the release's registration order, as argparse lists them."""
    if spelled.startswith("--"):
        base, dot, _ = spelled[2:].partition(".")
        if dot and not parser.dotted:
            return Verdict.NOT_JUDGED, ()  # passed to argparse whole: left to hf_dotted / vLLM
        name = "--" + base.replace("_", "-")
        if name in parser.options:
            return Verdict.KNOWN, ()
        matches = tuple(sorted(o for o in parser.options if o.startswith(name))) if parser.abbrev else ()
    else:
        name = spelled
        if "." in name:
            return Verdict.NOT_JUDGED, ()  # ``-cc.x``: folded or not by release, read in ``refused``
        if name in parser.options or name[:2] in parser.options:
            return Verdict.KNOWN, ()
        matches = tuple(sorted(o for o in parser.options if o.startswith(name))) if parser.abbrev else ()
    if len(matches) == 1:
        return Verdict.KNOWN, ()
    if len(matches) > 1:
        if not parser.exact:
            return Verdict.KNOWN, ()
        rank = _order(parser.index)
        return Verdict.AMBIGUOUS, tuple(sorted(matches, key=rank.__getitem__))
    return Verdict.UNKNOWN, ()


def has(option: str, version: Version) -> bool:
    """Whether read release ``version`` registers ``option`` (``--x``, ``-tp``) exactly."""
    return option in _read(releases().index(version)).options
