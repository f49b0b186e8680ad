"""The top-level ``vllm`` parser of each release, for the rehearsal's table (``sim_vllm_options.py``): its own options
and its sub-commands in registration order, read with regular expressions over the text like the rest of that table.

argparse's sub-parser action hands ``vllm serve``'s leftovers to the top-level parser, which refuses them under its own
prog and usage (``vllm: error: unrecognized arguments: ...``), so the rehearsal needs that usage line per release:
``usage: vllm [-h] [-v] {chat,complete,serve,...} ...``. Read from:

* vllm/scripts.py (to 0.7.2): ``main()``'s ``parser.add_argument`` calls and its ``subparsers.add_parser("<name>"``
  calls in text order (scripts.py@0.5.5: serve, complete, chat; ``-v/--version`` from @0.6.5);
* vllm/entrypoints/cli/main.py (from 0.7.3): ``main()``'s ``parser.add_argument`` calls, then each module of
  ``CMD_MODULES`` in order, the classes its ``cmd_init()`` returns and each class's ``name`` (a class attribute, or
  ``self.name`` in ``__init__`` to 0.9.0); each ``subparser_init`` adds its parser as ``self.name``.

What cannot be read fails loudly.
"""

from __future__ import annotations

import re
from pathlib import Path

_STR = r"""(?:"[^"\n]*"|'[^'\n]*')"""
_TOP_OPTION = re.compile(r"\bparser\.add_argument\(\s*(" + _STR + ")")
_ADD_PARSER = re.compile(r"\bsubparsers\.add_parser\(\s*(" + _STR + ")")
_MODULES = re.compile(r"CMD_MODULES\s*=\s*\[([^\]]*)\]")
_CMD_INIT = re.compile(r"^def cmd_init\([^)]*\)[^:]*:\s*return \[([^\]]*)\]", re.M)
_NAME = re.compile(r"^\s+(?:self\.)?name(?:\s*:\s*str)?\s*=\s*(" + _STR + ")", re.M)


def _main_body(text: str, where: Path) -> str:
    start = text.find("\ndef main(")
    if start < 0:
        raise SystemExit(f"{where}: no main()")
    end = text.find("\ndef ", start + 1)
    return text[start:end if end > 0 else len(text)]


def _class_name(text: str, cls: str, where: Path) -> str:
    match = re.search(r"^class " + cls + r"\b[^\n]*:\n((?:(?:[ \t][^\n]*)?\n)*)", text, re.M)
    found = _NAME.search(match.group(1)) if match else None
    if found is None:
        raise SystemExit(f"{where}: no name for {cls}")
    return found.group(1)[1:-1]


def cli(root: Path) -> tuple[list[str], list[str]]:
    """(the top-level parser's option strings as its usage shows them, ``-h`` first; its sub-commands in the order
    they are registered) of one release's sources under ``root`` (the ``vllm`` package)."""
    main = root / "entrypoints/cli/main.py"
    path = main if main.is_file() else root / "scripts.py"
    text = path.read_text(encoding="utf-8")
    body = _main_body(text, path)
    options = ["-h", *(m.group(1)[1:-1] for m in _TOP_OPTION.finditer(body))]
    if not main.is_file():
        commands = [m.group(1)[1:-1] for m in _ADD_PARSER.finditer(body)]
    else:
        listed = _MODULES.search(text)  # in main() from 0.8.5, at module level before
        if listed is None:
            raise SystemExit(f"{path}: no CMD_MODULES")
        commands = []
        for module in re.findall(r"vllm\.([\w.]+)", listed.group(1)):
            file = root / (module.replace(".", "/") + ".py")
            text = file.read_text(encoding="utf-8")
            init = _CMD_INIT.search(text)
            if init is None:
                raise SystemExit(f"{file}: no cmd_init returning a list")
            commands += [_class_name(text, cls, file) for cls in re.findall(r"(\w+)\(", init.group(1))]
    if "serve" not in commands:
        raise SystemExit(f"{path}: no serve sub-command read ({commands})")
    return options, commands
