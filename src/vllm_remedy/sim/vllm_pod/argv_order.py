"""The order the rehearsal pod's argparse consumes its options in: argv order, each refusal where it is reached.

The rehearsal's own reading (as ``argv``, apart from the tools'). CPython's ``_parse_known_args`` (Lib/argparse.py,
3.10 to 3.13, which vLLM's images ship; 3.12.1 l.1935-2164) first sorts every word into option or positional
(``_parse_optional``: an ambiguous prefix is refused there, before any value is read), then consumes the options one
by one in argv order (``consume_optional``): the explicit value of a flag that takes none (``ignored explicit
argument``), a missing value (``expected one argument``), the type and the choices (``take_action`` ->
``_get_values``) and the action itself (StoreBoolean's ValueError) are each raised where that option stands, so
``m --max-model-len abc --enforce-eager=1`` is refused for ``abc`` and ``m --enforce-eager=1 --max-model-len abc``
for ``1``. Checked with the interpreters themselves (3.10.13, 3.11.7, 3.12.1, 3.13.0) on a parser of the same shape.
A missing required positional comes once every option is consumed, the leftovers last (``parse_args``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

Position = tuple[int, int, int]
Item = tuple[str, tuple[str, ...], Position]
#: (canonical flag, its value or None, whether it is a boolean's ``--flag=text``) per option occurrence
Step = tuple[str, str | None, bool]
_FIRST: Position = (-1, -1, -1)
_UNPLACED: Position = (9, 0, 0)  # a boolean whose place is not known: judged after the options


def _value(words: tuple[str, ...]) -> str | None:
    """The value an argv item's words give its option: after ``=``, else the next word, else none."""
    _head, eq, text = words[0].partition("=")
    return text if eq else (words[1] if len(words) > 1 else None)


def steps(options: Iterable[tuple[str, str | None]], booleans: Iterable[tuple[str, str]],
          spelled: Sequence[Item]) -> list[Step]:
    """Every option occurrence of ``options`` (the caller's order, argv order for exec-form argv) and each boolean's
    ``--flag=text`` of ``booleans``, sorted by where ``spelled`` (``argv_added.placed``) says it stands. An option is
    placed by the item of its name with its value, else the first item of its name still free (a shell script's
    value is the expanded one), else any of its name; one ``spelled`` lacks (a wrapper's: ``placed`` holds none)
    keeps its place after the option before it. A boolean that is among ``options`` (the launch
    passes its ``=`` text as the value) is judged there; one that is not, at its own item, else after the options."""
    options = list(options)
    items = [(name, _value(words), at) for name, words, at in spelled if name and words]
    used: set[int] = set()
    placed: list[Position | None] = [None] * len(options)
    for rule in ("value", "free", "any"):
        for i, (flag, value) in enumerate(options):
            if placed[i] is not None:
                continue
            j = next((j for j, (name, v, _at) in enumerate(items) if name == flag and (
                rule == "any" or (j not in used and (rule == "free" or v == value)))), None)
            if j is not None:
                used.add(j)
                placed[i] = items[j][2]
    keyed: list[tuple[Position, int, Step]] = []
    last = _FIRST
    for i, (flag, value) in enumerate(options):
        last = placed[i] or last
        keyed.append((last, i, (flag, value, False)))
    for k, (flag, text) in enumerate(booleans):
        hit = next((n for n, (_at, _i, step) in enumerate(keyed) if step == (flag, text, False)), None)
        if hit is not None:
            at, i, _step = keyed[hit]
            keyed[hit] = (at, i, (flag, text, True))
            continue
        at = next((at for name, v, at in items if name == flag and v == text), _UNPLACED)
        keyed.append((at, len(options) + k, (flag, text, True)))
    return [step for *_key, step in sorted(keyed)]
