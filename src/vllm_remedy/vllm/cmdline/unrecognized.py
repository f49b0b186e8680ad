"""Options vLLM's argument parser certainly refuses as unknown: ``vllm serve: error: unrecognized arguments``, exit 2.

The flag table (``table``) is the union of three releases' parsers (0.7.3, 0.11.0, 0.34.0), not a table per release:
a flag in none of them may still exist in a release in between (0.9's, say). So the refusal is claimed only for those
three releases, where the union is complete (a long option the union lacks is in none of them, the requested one
included), and only for long options: a dotted key (``--x.y``), an alias, a ``--no-`` form, an underscore spelling and
a unique prefix all resolve to a known flag first (``flags.resolve``); a ``--no-`` form is then refused where the
release's flag is ``store_true`` (``booleans``: no negated form there). Every other release is left to vLLM (not
judged), as is a wrapper with its own parser (``dynamo.vllm``).

What every release's parser refuses whatever its table (a value outside ``choices``, a flag without its value, an
empty integer, a stray positional: ``refused``) is returned here too, in the order argparse reports it, so every
caller of ``unrecognized`` says the start is refused (exit 2) in argparse's words (``why``).
"""

from __future__ import annotations

from vllm_remedy.vllm import hf_overrides
from vllm_remedy.vllm.cmdline.booleans import option_strings
from vllm_remedy.vllm.cmdline.command import ServerCommand
from vllm_remedy.vllm.cmdline.flags import Kind
from vllm_remedy.vllm.cmdline.parse import Option
from vllm_remedy.vllm.cmdline.refused import Refused, refused
from vllm_remedy.vllm.memory.flag_values import CAPTURE_FLAGS_SINCE, CAPTURE_FLAGS_UNTIL
from vllm_remedy.vllm.memory.pinned import KV_BYTES_SINCE
from vllm_remedy.vllm.versions import parse_version

#: Flags whose first release was read (engine/arg_utils.py per release: memory.pinned, memory.flag_values): an older
#: release's parser has no such option, whatever release the table was read from.
ADDED: dict[str, tuple[int, int, int]] = {"kv-cache-memory-bytes": KV_BYTES_SINCE, **CAPTURE_FLAGS_SINCE,
                                          hf_overrides.FLAG: hf_overrides.SINCE,
                                          hf_overrides.PATH_FLAG: hf_overrides.PATH_SINCE}
#: Flags whose last release was read: a later release's parser has no such option again.
REMOVED: dict[str, tuple[int, int, int]] = dict(CAPTURE_FLAGS_UNTIL)
#: The releases whose parsers the flag table was read from (table.py's docstring).
READ_RELEASES = frozenset({"0.7.3", "0.11.0", "0.34.0"})


def unrecognized(server: ServerCommand, version: str | None) -> list[str]:
    """Each part of ``server``'s argv vLLM ``version``'s parser refuses, as written (``--bogus-flag 1``): first the
    options it cannot read (``refused``), then the unknown long options when ``version`` is a release the table is
    complete for, then stray positionals, as argparse reports them (``unrecognized arguments`` last)."""
    found = refused(server, version)
    options = [r for r in found if not r.message.startswith("unrecognized")]
    strays = [r for r in found if r.message.startswith("unrecognized")]
    return [*options, *_unknown(server, version), *strays]


def _unknown(server: ServerCommand, version: str | None) -> list[str]:
    if "dynamo" in server.entrypoint:
        return []
    v = parse_version(version)
    out = []
    for opt in server.options:
        flag = opt.flag
        unknown = version in READ_RELEASES and flag.kind is Kind.UNKNOWN and "." not in flag.name
        words = " ".join(t.value for t in opt.tokens)
        if flag.spelled.startswith("--") and _no_negation(opt, v):
            out.append(Refused(words, f"unrecognized arguments: {words}"))
        elif flag.spelled.startswith("--") and (unknown or _not_in_release(flag.name, v)):
            out.append(words)
    return out


def _no_negation(opt: Option, v: tuple[int, int, int] | None) -> bool:
    """``--no-x`` given to a release where ``--x`` is ``store_true`` (``booleans``: --enforce-eager and
    --trust-remote-code through 0.8.5): argparse has no ``--no-x`` option string there, nor one it prefixes, so it is
    ``unrecognized arguments: --no-enforce-eager`` (exit 2), whatever the newest table's BooleanOptionalAction says."""
    flag = opt.flag
    if not flag.negated or v is None or flag.kind is not Kind.BOOLEAN:
        return False
    return option_strings(flag.name, v) == f"--{flag.name}"


def _not_in_release(name: str, v: tuple[int, int, int] | None) -> bool:
    """A flag whose first (``ADDED``) or last (``REMOVED``) release is known, given to a release before it arrived or
    after it left: refused as any flag the parser lacks."""
    if v is None:
        return False
    since, gone = ADDED.get(name), REMOVED.get(name)
    return (since is not None and v < since) or (gone is not None and v >= gone)


def why(words: str, label: str) -> str:
    """The refusal in one phrase, in vLLM's words."""
    if isinstance(words, Refused):
        return f"vLLM {label} refuses {words} at argument parsing (argparse: \"{words.message}\")"
    return (f"vLLM {label} refuses {words.split()[0]} at argument parsing: it has no such flag (argparse: "
            f"\"unrecognized arguments: {words}\", or \"ambiguous option\" for the prefix of several)")
