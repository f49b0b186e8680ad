"""Dotted ``--hf-overrides.KEY VALUE`` as each release's FlexibleArgumentParser reads it, before argparse does.

Read in ``FlexibleArgumentParser.parse_args`` (utils.py@0.8.5, @0.9.0; utils/__init__.py@0.9.2, @0.10.1, @0.11.0;
utils/argparse_utils.py@0.12.0, @0.14.0, @0.16.0, @0.19.0, @0.20.0, @0.28.0, @0.34.0):

* up to 0.8.x there is no dotted reading: the whole option has ``_`` turned into ``-`` and argparse, which has no
  option string starting with ``--hf-overrides.``, refuses it: ``unrecognized arguments:
  --hf-overrides.num-hidden-layers 16`` (exit 2; ``refusal``);
* from 0.9.0 every ``--X.k.l V`` / ``--X.k.l=V`` is folded into a nested dict per spelled ``--X``, merged key by
  key (the later value of a repeated key wins), and ``--X <json.dumps(dict)>`` is appended after every other
  argument: argparse keeps the last value, so the dotted dict replaces a plain ``--hf-overrides JSON`` anywhere in
  argv (no merge), and of two spellings of one flag (``--hf-over.a``, ``--hf-overrides.b``) the one first written
  later wins;
* 0.9.0 turns ``_`` into ``-`` in the whole option (the key too: ``num-hidden-layers``, a key no config reads) and
  keeps the value as text; from 0.9.2 only the flag part (up to the first ``.``) is respelled, the value is
  ``json.loads``'d when it parses (``16`` is an int, ``true`` a bool), text otherwise, and ``KEY+ a,b`` is the list
  ``["a", "b"]`` (lists merge by concatenation); from 0.20.0 (0.19.0 has not) a value that is not JSON is tried as
  ``human_readable_int`` (``4k`` is 4000, ``4K`` 4096) before it stays text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from vllm_remedy.vllm.cmdline.command import ServerCommand
from vllm_remedy.vllm.cmdline.parse import Option

Version = tuple[int, int, int]
FLAG = "hf-overrides"
#: ``dict_args`` folding of ``--x.y`` (utils.py@0.9.0; none in @0.8.5).
SINCE: Version = (0, 9, 0)
#: Only the flag part respelled, values JSON-decoded, ``KEY+`` lists (utils/__init__.py@0.9.2; not in utils.py@0.9.0).
DECODED_SINCE: Version = (0, 9, 2)
#: ``human_readable_int`` for a value that is not JSON (utils/argparse_utils.py@0.20.0; not in @0.19.0).
HUMAN_INT_SINCE: Version = (0, 20, 0)
_HUMAN = re.compile(r"(\d+(?:\.\d+)?)([kKmMgGtT])")
_DECIMAL = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
_BINARY = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def dotted(server: ServerCommand) -> list[Option]:
    """The argv's dotted ``--hf-overrides.KEY`` options (any spelling argparse resolves to the flag), in order."""
    return [o for o in server.options if o.flag.name.startswith(f"{FLAG}.") and o.flag.spelled.startswith("--")]


def _text(opt: Option) -> str:
    return opt.flag.attached if opt.flag.attached is not None else (opt.values[0] if opt.values else "")


def refusal(server: ServerCommand, version: Version) -> list[tuple[str, str]]:
    """(words as written, argparse's message) for each dotted key a release before ``SINCE`` refuses as unknown:
    FlexibleArgumentParser respells the whole option with dashes first, so argparse names it so."""
    if version >= SINCE:
        return []
    out = []
    for opt in dotted(server):
        spelled = "--" + opt.flag.spelled[2:].replace("_", "-")
        seen = [f"{spelled}={opt.flag.attached}"] if opt.flag.attached is not None else [spelled, *opt.values]
        out.append((" ".join(t.value for t in opt.tokens), f"unrecognized arguments: {' '.join(seen)}"))
    return out


def _human_int(text: str) -> int | None:
    """``human_readable_int`` (utils/argparse_utils.py@0.20.0), None where it raises."""
    text = text.strip()
    match = _HUMAN.fullmatch(text)
    if match:
        number, suffix = match.groups()
        if suffix in _DECIMAL:
            return int(float(number) * _DECIMAL[suffix])
        return int(number) * _BINARY[suffix] if number.isdigit() else None
    try:
        return int(text)
    except ValueError:
        return None


def _value(text: str, version: Version) -> Any:
    if version < DECODED_SINCE:
        return text
    try:
        return json.loads(text)
    except ValueError:
        pass
    if version >= HUMAN_INT_SINCE and (number := _human_int(text)) is not None:
        return number
    return text


def _update(original: dict[str, Any], update: Mapping[str, Any]) -> None:
    """``recursive_dict_update``: dicts merge, lists concatenate (0.9.2+), anything else replaces."""
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(original.get(key), dict):
            _update(original[key], value)
        elif isinstance(value, list) and isinstance(original.get(key), list):
            original[key] += value
        else:
            original[key] = value


def folded(server: ServerCommand, version: Version) -> str | None:
    """The ``--hf-overrides`` JSON argparse receives last from the dotted keys in release ``version``, None when
    there are none (or the release does not fold them: ``refusal``)."""
    if version < SINCE:
        return None
    groups: dict[str, dict[str, Any]] = {}
    for opt in dotted(server):
        head, text = opt.flag.spelled[2:], _text(opt)
        if version < DECODED_SINCE:
            head, value = head.replace("_", "-"), _value(text, version)
        else:
            base, _, rest = head.partition(".")
            head = f"{base.replace('_', '-')}.{rest}"
            if head.endswith("+"):
                head, value = head[:-1], list(text.split(","))
            else:
                value = _value(text, version)
        base, *keys = head.split(".")
        nested: Any = value
        for key in reversed(keys):
            nested = {key: nested}
        _update(groups.setdefault(base, {}), nested)
    return json.dumps(list(groups.values())[-1]) if groups else None


def received(server: ServerCommand, flags: Mapping[str, str], version: Version) -> tuple[dict[str, str], bool | None]:
    """(``flags`` with ``--hf-overrides`` as argparse receives it once the dotted keys are folded, whether that
    value is known text): unchanged and None without dotted keys (folded); a dotted value the tools cannot read
    leaves it unknown (False)."""
    text = folded(server, version)
    if text is None:
        return dict(flags), None
    known = not server.placeholder([t for o in dotted(server) for t in o.tokens])
    return {**flags, FLAG: text}, known
