"""Resolve one argv token to a canonical vLLM flag the way vLLM's argparse would.

vLLM rewrites `_` to `-` in a flag name (up to the first `.`), accepts unique prefixes (`--max-num-seq`),
short aliases (`-tp`), `--no-x` for booleans and `-O3` for the optimization level. A patcher that misses
any of these edits the wrong token or appends a duplicate, so all of them are resolved here in one place.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from enum import Enum

from vllm_remedy.vllm.cmdline import release_flags, table


class Kind(str, Enum):
    """How many argv tokens a flag takes."""

    BOOLEAN = "boolean"  # --x / --no-x (legacy: --x=False, --x False)
    STORE_TRUE = "store_true"  # bare --x only
    OPTIONAL = "optional"  # bare or one value
    MULTI = "multi"  # one or more values
    VALUE = "value"  # exactly one value
    UNKNOWN = "unknown"  # not in the table: takes a value unless the next token is an option


def kind_of(name: str) -> Kind:
    """Arity of a canonical flag name (dotted `x.y` flags always take one value)."""
    if "." in name:
        return Kind.VALUE
    if name in table.BOOLEAN:
        return Kind.BOOLEAN
    if name in table.STORE_TRUE:
        return Kind.STORE_TRUE
    if name in table.OPTIONAL_VALUE:
        return Kind.OPTIONAL
    if name in table.MULTI_VALUE:
        return Kind.MULTI
    if name in table.SINGLE_VALUE:
        return Kind.VALUE
    return Kind.UNKNOWN


#: Flags that took one word before they took ``nargs='+'``: the first release read with the list (--api-key:
#: ``parser.add_argument("--api-key", type=optional_type(str))`` in entrypoints/openai/cli_args.py@0.5.5-0.10.0,
#: ``api_key: Optional[list[str]]`` in FrontendArgs from 0.10.1). Used only where no release read reaches.
MULTI_SINCE: dict[str, tuple[int, int, int]] = {"api-key": (0, 10, 1)}
_ZERO = (Kind.BOOLEAN, Kind.STORE_TRUE)


def kind_in(name: str, version: tuple[int, int, int] | None, kind: Kind | None = None) -> Kind:
    """Arity of ``name`` (``kind``: what the union table resolved it to) in release ``version``: that release's own
    parser decides (``release_flags.nargs``, read from its source; an option the union table lacks, such as 0.34.0's
    ``--disable-prefix-caching``, by its exact string or the one it abbreviates there); the newest release read for
    an unknown ``version`` or a newer one; the union table where no release read says (older than the oldest read,
    or two neighbours that disagree). Only the number of words changes: a flag
    taking none in both keeps the table's kind (its ``--no-`` handling), as does a legacy StoreBoolean (``parse``)."""
    kind = kind or kind_of(name)
    if "." in name:
        return kind
    newest = release_flags.releases()[-1]
    if version is None or version > newest:
        version = newest  # unknown or newer than read: the newest release read (0.34.0's --disable-x inverses too)
    code = release_flags.nargs(f"--{name}", version)
    if code is None and kind is Kind.UNKNOWN:
        option = release_flags.prefixed(f"--{name}", version)
        code = release_flags.nargs(option, version) if option else None
    if code is None:
        since = MULTI_SINCE.get(name)
        return Kind.VALUE if since is not None and version < since and kind is Kind.MULTI else kind
    if code == "0":
        if kind in _ZERO:
            return kind
        return Kind.BOOLEAN if release_flags.nargs(f"--no-{name}", version) is not None else Kind.STORE_TRUE
    if code == "?":
        return kind if kind is Kind.BOOLEAN and name in table.LEGACY_OPTIONAL_BOOLEAN else Kind.OPTIONAL
    return Kind.VALUE if code == "1" else Kind.MULTI


def in_release(flag: Flag, version: tuple[int, int, int] | None) -> Flag:
    """``flag`` as release ``version``'s parser reads it: an EnableDisableAction inverse (0.33.0+:
    ``--disable-chunked-prefill`` is registered on ``--enable-chunked-prefill``'s action and sets it false) as the
    negated flag it sets, like ``--no-enable-chunked-prefill``, so the settings see it; then the words it takes there
    (``kind_in``). The written spelling is kept (``spelled``) for edits and argparse's messages."""
    if not flag.negated and (inverse := _inverse_in(flag.name, version)) is not None:
        flag = replace(flag, name=inverse, kind=kind_of(inverse), negated=True)
    kind = kind_in(flag.name, version, flag.kind)
    return flag if kind is flag.kind else replace(flag, kind=kind)


def _inverse_in(name: str, version: tuple[int, int, int] | None) -> str | None:
    """The boolean whose action ``--name`` is the appended inverse of in that release (the newest read when unknown
    or newer), by the action's option strings as read (``release_flags.shown``: the inverse comes after the flag's
    own strings); None for any other flag or release."""
    if not name.startswith(("enable-", "disable-")):
        return None
    newest = release_flags.releases()[-1]
    v = newest if version is None or version > newest else version
    option = f"--{name}" if release_flags.nargs(f"--{name}", v) is not None else release_flags.prefixed(f"--{name}", v)
    if option is None or not option.startswith(("--enable-", "--disable-")):
        return None
    a, b = ("--enable-", "--disable-") if option.startswith("--enable-") else ("--disable-", "--enable-")
    other = b + option[len(a):]
    strings = (release_flags.shown(option, v) or "").split("/")
    return other[2:] if other[2:] in table.BOOLEAN and strings[0] == other and option in strings[1:] else None


KNOWN: frozenset[str] = table.BOOLEAN | table.STORE_TRUE | table.OPTIONAL_VALUE | table.MULTI_VALUE | table.SINGLE_VALUE
# Every long option string argparse would match prefixes against (without the leading `--`).
_OPTION_STRINGS: tuple[str, ...] = tuple(
    sorted(KNOWN | {f"no-{b}" for b in table.BOOLEAN} | {a for a in table.ALIASES if not a.startswith("-")})
)
_NEGATIVE_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")


def is_boolean(name: str) -> bool:
    """Whether the flag takes no value on the command line (``--x`` / ``--no-x``), so set writes true/false as forms."""
    return kind_of(name) in (Kind.BOOLEAN, Kind.STORE_TRUE)


def has_no_form(name: str) -> bool:
    """True when the newest vLLM accepts `--no-<name>`."""
    return name in table.BOOLEAN


def off_by_default(name: str) -> bool:
    """True when an absent boolean means false in every vLLM release read (so removing it is version-safe)."""
    return name in table.OFF_BY_DEFAULT


def is_option(token: str) -> bool:
    """Does argparse see this token as an option (not a value)? Negative numbers, `-` and a spaced word that names
    no option (`"--max-model-len 16384"` as one argv item) are values."""
    return resolve(token) is not None


@dataclass(frozen=True)
class Flag:
    """A resolved option token.

    ``name`` is canonical (dashes, no `--`); ``negated`` for `--no-x`; ``attached`` is the text after `=`
    (or after `-O`), None when the value, if any, is in the next token; ``spelled`` is the token's flag part
    exactly as written (before `=`), so an edited value keeps the user's spelling.
    """

    name: str
    kind: Kind
    negated: bool
    attached: str | None
    spelled: str


def _canonical_long(norm: str) -> tuple[str, bool] | None:
    """Canonical name and negation for a normalized long name, by exact match then unique prefix."""
    def exact(n: str) -> tuple[str, bool] | None:
        if n in KNOWN:
            return n, False
        if n in table.ALIASES:
            return table.ALIASES[n], False
        if n.startswith("no-") and n[3:] in table.BOOLEAN:
            return n[3:], True
        return None

    found = exact(norm)
    if found:
        return found
    matches = [o for o in _OPTION_STRINGS if o.startswith(norm)]
    if len(matches) == 1:
        return exact(matches[0])
    return None


def resolve(token: str) -> Flag | None:
    """The flag a token denotes, or None when it is a value/positional. Unknown options resolve too."""
    if not token.startswith("-") or token == "-" or _NEGATIVE_NUMBER.match(token):
        return None
    if token.startswith("--"):
        head, eq, value = token[2:].partition("=")
        attached = value if eq else None
        base, dot, rest = head.partition(".")
        norm = base.replace("_", "-")
        found = _canonical_long(norm)
        if found is None and " " in token:
            return None  # a positional to argparse (`_parse_optional`: "if it contains a space, it was meant to be a
            # positional"): `"--max-model-len 16384"` as one argv item names no option, exactly or by prefix
        name, negated = found if found else (norm, False)
        if dot:
            return Flag(f"{name}.{rest}", Kind.VALUE, False, attached, "--" + head)
        return Flag(name, kind_of(name) if found else Kind.UNKNOWN, negated, attached, "--" + head)
    if token.startswith("-O") and token != "-O" and not token.startswith("-O="):
        return Flag("optimization-level", Kind.VALUE, False, token[2:], "-O")
    head, eq, value = token.partition("=")
    attached = value if eq else None
    if head == "-O":
        return Flag("optimization-level", Kind.VALUE, False, attached, head)
    if head in table.ALIASES:
        name = table.ALIASES[head]
        return Flag(name, kind_of(name), False, attached, head)
    if " " in token:
        return None  # `"-tp 2"` as one item: no option string, so a positional to argparse, as above
    return Flag(head.lstrip("-"), Kind.UNKNOWN, False, attached, head)


def misspaced(word: str) -> str | None:
    """The canonical flag a one-item ``"--max-model-len 16384"`` (flag and value in one argv item, a common YAML slip)
    was meant as, or None: argparse reads such an item as a positional (``resolve``), so an edit of that flag removes
    it rather than keep it beside the flag it writes."""
    head = word.split(None, 1)[0] if word.strip() else ""
    if " " not in word or resolve(word) is not None or not head.startswith("-"):
        return None
    flag = resolve(head)
    return flag.name if flag is not None and flag.kind is not Kind.UNKNOWN else None


def canonical_key(key: str) -> str:
    """A user-supplied key (`max_model_len`, `--max-num-seq`, `tp`) as a canonical flag name."""
    key = key.strip()
    token = key if key.startswith("-") else ("-" + key if f"-{key}" in table.ALIASES else "--" + key)
    flag = resolve(token)
    if flag is None:
        return key
    return flag.name
