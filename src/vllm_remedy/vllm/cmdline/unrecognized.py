"""Options vLLM's argument parser certainly refuses as unknown: ``unrecognized arguments``, exit 2.

``vllm serve``'s sub-parser only collects what it does not know; the top-level ``vllm`` parser refuses it, under its
own usage: ``vllm: error: unrecognized arguments: ...`` (argparse's sub-parser action; vllm/scripts.py@0.5.5,
entrypoints/cli/main.py@0.7.3-0.34.0), ``api_server.py: error: ...`` for the OpenAI module, whose one parser has no
sub-parser. The refusals serve's own parser raises (``refused``: a value, a missing model tag) stay ``vllm serve``'s.

Each release's own parser decides (``release_flags``: every option string of ``vllm serve`` per release, read from
vLLM's source by ``scripts/vllm_flags.py``). On a release read the table is complete, so an option it lacks is
refused as argparse refuses it: a long option (``--bogus-flag 1``, a flag added later or removed earlier) or a short
one (``-tp`` before it existed) that is no option string and the prefix of none is ``unrecognized arguments``; the
prefix of several is ``ambiguous option``. Underscores, dotted keys (``--x.y``, from the release that folds them),
``--no-`` and ``--disable-`` forms and prefixes are resolved against that release's strings, not the newest's: a
prefix unique in 0.34.0 may be ambiguous or absent in 0.9.2. For a release between two read ones (0.8.4, 0.9.1,
0.10.1.1) the claim is an inference: refused only when neither neighbouring read release has the option (nor an
option it prefixes). A release newer than the newest read (0.35.0, 0.34.1, 0.35.0rc1: ``later``), or an image
naming none, is judged with the newest read release's parser, as the rehearsal pod of that image judges it: an option
that release has is taken, an ambiguous prefix and an option some read release had and the newest dropped are
refused, and a name no release read ever had is *not judged* (``unjudged``: it may be the new release's, which nobody
here read): check and plan say so (``note``), and the pod starts with it. Older than the oldest read, or a
pre-release of a read one, is not judged, nor is a wrapper with its own parser (``dynamo.vllm``) or the demo
``vllm.entrypoints.api_server`` (another parser). The hand-read first/last releases (``ADDED``/``REMOVED``) still apply
where the table does not reach; tests check they agree with the table. A ``--no-`` form is refused where the release's
flag is ``store_true`` (``booleans``) whatever the table says, in argparse's words.

What every release's parser refuses whatever its table (a value outside ``choices``, a flag without its value, an
empty integer, a stray positional: ``refused``) is returned here too, in the order argparse reports it, so every
caller of ``unrecognized`` says the start is refused (exit 2) in argparse's words (``why``).
"""

from __future__ import annotations

from vllm_remedy.vllm import hf_overrides
from vllm_remedy.vllm.cmdline import config_splice
from vllm_remedy.vllm.cmdline.booleans import option_strings
from vllm_remedy.vllm.cmdline.command import ServerCommand
from vllm_remedy.vllm.cmdline.flags import Kind
from vllm_remedy.vllm.cmdline.parse import Option
from vllm_remedy.vllm.cmdline.refused import Refused, missing_model_tag, model_flag_refusal, refused
from vllm_remedy.vllm.cmdline.release_flags import Parser, Verdict, ever, judge, newest, parser_for, releases
from vllm_remedy.vllm.memory.flag_values import CAPTURE_FLAGS_SINCE, CAPTURE_FLAGS_UNTIL
from vllm_remedy.vllm.memory.pinned import KV_BYTES_SINCE
from vllm_remedy.vllm.version_labels import dotted
from vllm_remedy.vllm.versions import NEWEST_RELEASE, parse_version, rules

#: Flags whose first release was read (engine/arg_utils.py per release: memory.pinned, memory.flag_values): an older
#: release's parser has no such option, whatever release the table was read from.
ADDED: dict[str, tuple[int, int, int]] = {"kv-cache-memory-bytes": KV_BYTES_SINCE, **CAPTURE_FLAGS_SINCE,
                                          hf_overrides.FLAG: hf_overrides.SINCE,
                                          hf_overrides.PATH_FLAG: hf_overrides.PATH_SINCE}
#: Flags whose last release was read: a later release's parser has no such option again.
REMOVED: dict[str, tuple[int, int, int]] = dict(CAPTURE_FLAGS_UNTIL)
#: Entrypoints whose parser is not ``make_arg_parser``'s (the one ``release_flags`` was read from; ``vllm serve``, the
#: OpenAI ``api_server`` module and the image's default share it): the demo server and a script of one's own.
_OTHER_PARSER = ("vllm.entrypoints.api_server", ".py")


def unrecognized(server: ServerCommand, version: str | None) -> list[str]:
    """Each part of ``server``'s argv vLLM ``version``'s parser refuses, as written (``--bogus-flag 1``), in the order
    argparse reports them (the first is what vLLM prints): an ambiguous option, then the options it cannot read in
    argv order (``refused``), a missing model tag, the options ``version``'s parser does not have (``release_flags``),
    then stray positionals (``unrecognized arguments`` last)."""
    v = parse_version(version) or NEWEST_RELEASE
    if (early := model_flag_refusal(server, v, parsed=False)) is not None:
        return [early]  # FlexibleArgumentParser raises before argparse reads a word (0.8.3-0.11.0)
    if (spliced := config_splice.refusal(server, v)) is not None:
        return [spliced]  # then it splices in the --config file: a ValueError, or a flag that lost its value
    found = refused(server, version)
    options = [r for r in found if not r.message.startswith("unrecognized")]
    strays = [r for r in found if r.message.startswith("unrecognized")]
    unknown = _unknown(server, version)
    ambiguous = [u for u in unknown if getattr(u, "message", "").startswith("ambiguous")]
    unknown = [u for u in unknown if u not in ambiguous]
    # argparse sorts every word into option or positional before it reads any value (CPython 3.10-3.13
    # ``_parse_known_args``: ``_parse_optional`` per word, then ``consume_optional`` in argv order), so an ambiguous
    # prefix anywhere is refused before any value, explicit boolean value or StoreBoolean word earlier in argv
    if found and found[-1].exit_code == 1:  # a StoreBoolean's ValueError ends the parse: no leftovers, no model tag
        return [*ambiguous, *options]  # check (``refused.store_boolean_value``)
    # argparse checks the required model tag once every word is consumed, before it reports the leftovers; a word
    # after an option the release lacks is consumed as that tag (then it is no leftover either: not judged)
    required = [] if any(" " in u for u in unknown) or (missing := missing_model_tag(server, v)) is None else [missing]
    out = [*ambiguous, *options, *required, *unknown, *strays]
    late = model_flag_refusal(server, v, parsed=True)  # serve's own check, once argparse took every word (to 0.8.0)
    return out if out or late is None else [late]


def _unknown(server: ServerCommand, version: str | None) -> list[str]:
    return _sorted(server, version)[0]


def unjudged(server: ServerCommand, version: str | None) -> list[str]:
    """The options of ``server``'s argv (as written, ``--foo-bar 1``) a release newer than the newest read may have:
    the newest read release has no such option string and no release read ever had one, so it may be new in
    ``version``. Neither refused nor passed as known: every output says it was not judged (``note``)."""
    return _sorted(server, version)[1]


def later(version: str | None) -> bool:
    """A release past the newest read (0.35.0, 0.34.1, 0.34.0.post1, 0.35.0rc1: rules extrapolated from 0.34.0), or
    one not named (``:latest``, a digest: it may be as new), not one between two read releases (0.34.0rc1 precedes
    0.34.0)."""
    r = rules(version)
    return not r.known or (r.extrapolated and r.read_from == releases()[-1])


def note(words: str, version: str | None) -> str:
    """What check and plan say of an option ``unjudged`` returns, as the rehearsal pod treats it."""
    r = rules(version)
    release = r.display if r.known else "the image's release"
    return (f"not judged: {_folded(words.split()[0])} is not an option of vLLM {dotted(releases()[-1])}, the newest "
            f"release read; {release} may accept it (a rehearsal pod starts with it, its effect not modelled)")


def _sorted(server: ServerCommand, version: str | None) -> tuple[list[str], list[str]]:
    """(the options ``version``'s parser refuses, the options not judged). Past the newest read release the newest
    one's parser judges (``later``): a release keeps the options of the one before it (vLLM drops an option only
    after deprecating it, and those drops were read), so an ambiguous prefix stays ambiguous and an option string
    some read release had and the newest lacks (removed: ``--swap-space``, ``--task``) stays refused; a name no
    release read ever had may be one the release added (``unjudged``), which the rehearsal pod takes too."""
    if "dynamo" in server.entrypoint:
        return [], []
    v = parse_version(version)
    other = server.entrypoint.endswith(_OTHER_PARSER)
    parser = None if other else parser_for(version)
    past = parser is None and not other and later(version)
    if past:
        parser = newest()
    out: list[str] = []
    open_: list[str] = []
    for opt in server.options:
        flag = opt.flag
        words = " ".join(t.value for t in opt.tokens)
        if flag.spelled.startswith("--") and _no_negation(opt, v, parser):
            out.append(Refused(words, f"unrecognized arguments: {_as_parsed(words)}"))
            continue
        verdict, matches = judge(flag.spelled, parser) if parser is not None and _judged(flag.spelled) else \
            (Verdict.NOT_JUDGED, ())
        if verdict is Verdict.AMBIGUOUS:
            token = opt.tokens[0].value
            out.append(Refused(words, f"ambiguous option: {_folded(token)} could match {', '.join(matches)}"))
        elif verdict is Verdict.UNKNOWN and past and not ever(flag.spelled):
            open_.append(words)  # perhaps added after the newest read: not judged
        elif verdict is Verdict.UNKNOWN or (flag.spelled.startswith("--") and (parser is None or not parser.exact)
                                             and _not_in_release(flag.name, v)):
            out.append(words)  # a read release's table is exact; elsewhere the hand-read boundaries still apply
    return out, open_


def _judged(spelled: str) -> bool:
    """A long option, or a short one that is no value (``-1``) nor ``-O`` (``refused`` reads ``-O3``/``-O 3``)."""
    return spelled.startswith("--") or (len(spelled) > 1 and not spelled.startswith("-O"))


def _folded(token: str) -> str:
    """The token as argparse prints it: ``FlexibleArgumentParser.parse_args`` has rewritten ``_`` to ``-`` in its name
    (every release read, 0.5.5 to 0.34.0: ``release_flags``' ``underscore``; up to the first ``.`` from 0.9.2, the
    whole word before, where a dotted key is not judged)."""
    if not token.startswith("--"):
        return token
    head, eq, value = token.partition("=")
    base, dot, rest = head.partition(".")
    return base.replace("_", "-") + dot + rest + eq + value


def _as_parsed(words: str) -> str:
    """Refused words as argparse lists them: the option word folded (``--bogus_flag 1`` is ``--bogus-flag 1``)."""
    head, sep, rest = words.partition(" ")
    return _folded(head) + sep + rest


def _no_negation(opt: Option, v: tuple[int, int, int] | None, parser: Parser | None) -> bool:
    """``--no-x`` given to a release where ``--x`` is ``store_true`` (--enforce-eager and --trust-remote-code through
    0.8.5): argparse has no ``--no-x`` option string there, nor one it prefixes, so it is ``unrecognized arguments:
    --no-enforce-eager`` (exit 2), whatever the newest table's BooleanOptionalAction says. A read release's own
    strings decide (0.9.0 has ``--no-enforce-eager``), and a release between two read ones lacks it only when both
    do (0.9.1 has it); ``booleans``' hand-read lists only where no release read reaches."""
    flag = opt.flag
    if not flag.negated or v is None or flag.kind is not Kind.BOOLEAN:
        return False
    if parser is not None:
        return judge(flag.spelled, parser)[0] is Verdict.UNKNOWN
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
    if isinstance(words, Refused) and words.exit_code != 2:  # vLLM's CLI around argparse: a traceback
        return (f"vLLM {label} refuses {words} before it starts: \"{words.message}\" (exit {words.exit_code}: the "
                "pod never starts)")
    if isinstance(words, Refused) and words.advice is not None:  # the command as a whole
        return f"vLLM {label} refuses {words} at argument parsing (argparse: \"{words.message}\")"
    if isinstance(words, Refused):
        return f"vLLM {label} refuses {words} at argument parsing (argparse: \"{words.message}\")"
    return (f"vLLM {label} refuses {words.split()[0]} at argument parsing: it has no such flag (argparse: "
            f"\"unrecognized arguments: {_as_parsed(words)}\", or \"ambiguous option\" for the prefix of several)")
