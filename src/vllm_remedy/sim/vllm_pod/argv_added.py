"""Options a release's parser does not have yet (or any more): argparse leaves them over and refuses them with
``unrecognized arguments: --flag value`` (exit 2), before any engine line; a single-dash one too (``-xyz``).

The rehearsal's own table, read from vLLM's engine/arg_utils.py at each release (the releases between two read ones
were not read, so a boundary is the first release read with or without the option): kept apart from the tools'
``cmdline.unrecognized.ADDED`` as ``argv`` is from ``cmdline.values`` (the rehearsal is what the tools are tested
against). argparse (CPython 3.12 ``_parse_known_args``) puts an unknown option's word in ``extras`` and reads the words
after it as positionals: the first positional of ``vllm serve`` is ``model_tag``, every later one is left over too, so
``vllm serve MODEL --kv-cache-memory-bytes 4G`` is ``unrecognized arguments: --kv-cache-memory-bytes 4G`` (the value
word a leftover positional, in argv order) and ``--kv-cache-memory-bytes=4G`` one word. vLLM's FlexibleArgumentParser
turns ``--a_b`` (the key of ``--a_b=v``) into ``--a-b`` before argparse sees it (its ``parse_args``; not read per
release here), so the message says the dashes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from . import argv_options

Version = tuple[int, int, int]
Position = tuple[int, int, int]
#: One argv item: the canonical long option name ("" for a bare positional), its words as written, where it stands.
Item = tuple[str, tuple[str, ...], Position]

#: (first release with the option, first release without it again or None), per long option.
SPAN: dict[str, tuple[Version, Version | None]] = {
    # ``--hf-overrides`` (ModelConfig.hf_overrides): engine/arg_utils.py@0.6.4 has it, @0.6.3 not.
    "hf-overrides": ((0, 6, 4), None),
    # ``--hf-config-path``: engine/arg_utils.py@0.8.0 has it, @0.7.3 not (0.7.3 is the last 0.7 read).
    "hf-config-path": ((0, 8, 0), None),
    # ``--cuda-graph-sizes`` (SchedulerConfig): engine/arg_utils.py@0.9.0 has it, @0.8.5 not; @0.11.1/@0.12.0 keep it
    # as a deprecated option ("will be removed in v0.13.0"), @0.13.0 (and every later release read, to 0.34.0) has no
    # such option string: a removal, so 0.13.0 on refuses it as unknown.
    "cuda-graph-sizes": ((0, 9, 0), (0, 13, 0)),
    # ``--kv-cache-memory-bytes`` (CacheConfig): engine/arg_utils.py@0.10.2 has it, @0.10.1 not.
    "kv-cache-memory-bytes": ((0, 10, 2), None),
    # ``--cudagraph-capture-sizes`` and ``--max-cudagraph-capture-size`` (CompilationConfig):
    # engine/arg_utils.py@0.11.1 has both, @0.11.0 neither.
    "cudagraph-capture-sizes": ((0, 11, 1), None),
    "max-cudagraph-capture-size": ((0, 11, 1), None),
}


def missing(name: str, version: Version) -> bool:
    """Whether ``version``'s parser has no ``--name`` option string (``SPAN``; a flag not in it: not judged here)."""
    span = SPAN.get(name)
    if span is None:
        return False
    since, until = span
    return version < since or (until is not None and version >= until)


def _dashed(word: str) -> str:
    """FlexibleArgumentParser's spelling of a ``--`` word: underscores of the key become dashes (a single-dash word
    stays as written)."""
    if not word.startswith("--"):
        return word
    key, eq, value = word.partition("=")
    return "--" + key[2:].replace("_", "-") + eq + value


def lacking(item: Item, version: Version, serve: bool = True) -> bool:
    """Whether ``version``'s parser has no option for this argv item: ``SPAN``, else the rehearsal's table of every
    release's option strings (``argv_options``, by the word as written: an unknown name, a dotted one before 0.9.0)."""
    name, words, _at = item
    return bool(name and words) and (missing(name, version) or argv_options.unknown(words[0], version, serve))


def unmodelled(spelled: Sequence[Item], version: Version, later: bool, serve: bool = True) -> list[Item]:
    """The options (long or single-dash) a release past the newest read (``later``: 0.35.0, 0.34.0.post1, 0.35.0rc1,
    or an image naming none) may have added: its parser is taken as the newest read one's plus what it added, and an
    option no release read ever had (``argv_options.unmodelled``) is taken as added. Chosen over refusing it: vLLM
    keeps the options of the release before (it drops one only after deprecating it, and the drops read are still
    refused: ``--swap-space`` past 0.17, ``--task``), and a manifest pinned to a newer tag most plausibly names an
    option that tag has; a typo is then not caught, as the tools cannot catch it either. check and plan say "not
    judged" of the same option (``cmdline.unrecognized.unjudged``) and the pod's log says it was not modelled, so the
    rehearsal and the merge gate agree and neither claims to know."""
    if not later:
        return []
    return [i for i in spelled if i[0] and i[1] and argv_options.unmodelled(i[1][0], version, serve)]


def _merge(into: dict[str, Any], update: dict[str, Any]) -> None:
    """FlexibleArgumentParser's ``recursive_dict_update``: nested dicts merge, anything else replaces."""
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value


def leftovers(items: Sequence[Item], version: Version, takes: int, serve: bool = True) -> list[str] | None:
    """The words argparse leaves over, in argv order, when ``items`` hold an option ``version`` lacks (None when
    none does, so the caller keeps its own count of positionals): each such option's flag word, then its value words
    and every bare positional as positionals, of which the first ``takes`` are the parser's model tag. ``serve``:
    ``vllm serve``'s parser, else the api_server module's (which lacks the options only the sub-parser adds)."""
    late = [(words, at) for name, words, at in items if lacking((name, words, at), version, serve)]
    if not late:
        return None
    dicts: dict[str, dict[str, Any]] = {}  # a dotted word folds into ``--x <json>`` appended after every other word
    for words, _at in late:
        if (fold := argv_options.folded(words[0], version)) is not None:
            name, keys, text = fold
            text = text if text is not None else (words[1] if len(words) > 1 else "")
            try:  # 0.9.0 keeps the text; from 0.9.2 ``json.loads`` first
                value: Any = text if version < (0, 9, 2) else json.loads(text)
            except ValueError:
                value = text
            for key in reversed(keys):
                value = {key: value}
            _merge(dicts.setdefault(name, {}), value)
    late = [(words, at) for words, at in late if argv_options.folded(words[0], version) is None]
    end: Position = (9, 0, 0)
    flags = [(at, 0, _dashed(words[0])) for words, at in late] + [(end, 2 * i, n) for i, n in enumerate(dicts)]
    stream = [(at, 0, words[0]) for name, words, at in items if not name and words]
    stream += [(at, i, w) for words, at in late for i, w in enumerate(words[1:], 1)]
    stream += [(end, 2 * i + 1, json.dumps(d)) for i, d in enumerate(dicts.values())]
    stream.sort()
    return [word for *_k, word in sorted(flags + stream[takes:])]


def skipped(options: Iterable[tuple[str, str | None]], version: Version) -> set[str]:
    """The option names argparse never converts in ``version``: it has no such option (its words are left over)."""
    return {name for name, _v in options if missing(name, version)}


def placed(cmd: Any, judged: bool) -> list[Item]:
    """A server command's options and bare positionals in argv order (``cmd``: the parsed ServerCommand), or none
    when the pod does not judge its parser (a wrapper with its own, ``judged`` False). A single-dash option is placed
    as a long one: one argparse leaves over (``argv_options.unknown``: ``-xyz``) joins the leftovers where it
    stands."""
    if not judged:
        return []

    def at(token: Any) -> Position:
        span = getattr(token, "span", None)
        return (0 if token.field == "command" else 1, token.index, span[0] if span else 0)

    items: list[Item] = [(o.name, tuple(t.value for t in o.tokens), at(o.tokens[0])) for o in cmd.options
                         if o.tokens]
    items += [("", (t.value,), at(t)) for t in cmd.positionals]
    return sorted(items, key=lambda item: item[2])
