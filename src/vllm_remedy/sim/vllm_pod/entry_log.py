"""What the pod's log owes to the entrypoint actually run: the model entries of "non-default args" and the top of a
traceback.

"non-default args" (from 0.9.0) is ``log_non_default_args(args)``, called in ``run_server`` by either entrypoint: every
attribute of the parsed Namespace that differs from ``parser.parse_args([])`` (entrypoints/openai/cli_args.py@0.10.0
l.255-261, entrypoints/utils.py@0.11.0 l.209-217), in the parser's order, ``model_tag`` first
(cli_args.py@0.10.0 l.214). So:

* ``vllm serve MODEL``: ``model_tag`` and ``model`` (serve copies the tag to ``args.model`` before run_server,
  entrypoints/cli/serve.py@0.10.0 l.42); ``vllm serve --model=M`` (0.8.3-0.11.0 take that form as it is): ``model``
  alone, ``model_tag`` None is the default; from 0.11.1 ``--model M`` is moved to the front as the tag;
* ``python -m vllm.entrypoints.openai.api_server MODEL`` (0.10.0 on: the optional ``model_tag`` no code reads):
  ``model_tag`` alone, ``model`` keeps ``ModelConfig.model``'s default and is not listed; ``--model M``: ``model``.

An option taken though no release read had it (past the newest read: ``argv_added.unmodelled``) is listed as
argparse would, under its dest (``--foo-bar 1``: ``'foo_bar': '1'``), right after the model entries: the order is the
parser's, which nobody read for it, and its value the text typed (its type was not read either).

A traceback of the module starts in runpy and api_server.py's ``__main__`` (``uvloop.run(run_server(args))``, each
release's line), not in ``/usr/local/bin/vllm`` and entrypoints/cli/serve.py.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from vllm_remedy.vllm.cmdline import ServerCommand

Version = tuple[int, int, int]
Entries = tuple[tuple[str, object], ...]
MODULE_TAG_SINCE: Version = (0, 10, 0)  # make_arg_parser's model_tag (cli_args.py@0.10.0 l.214)
HOISTED_SINCE: Version = (0, 11, 1)
QWEN_DEFAULT_SINCE: Version = (0, 10, 0)
_SITE = "/usr/local/lib/python3.12/dist-packages/vllm"
#: api_server.py's ``uvloop.run(run_server(args))`` line under ``if __name__ == "__main__"``, per release read
_MAIN_LINE: dict[Version, int] = {(0, 10, 0): 1856, (0, 10, 1): 1918, (0, 10, 2): 2011, (0, 11, 0): 1953}
_ARGS = re.compile(r"non-default args: \{'model_tag': '[^']*', 'model': '[^']*'(, )?")


def default_model(version: Version) -> str:
    """``ModelConfig.model``: "facebook/opt-125m" to 0.9.2 (config.py@0.9.2 l.233), "Qwen/Qwen3-0.6B" from 0.10.0
    (config.py@0.10.0 l.231 to config/model.py@0.34.0 l.161)."""
    return "Qwen/Qwen3-0.6B" if version >= QWEN_DEFAULT_SINCE else "facebook/opt-125m"


def module(cmd: ServerCommand) -> bool:
    return "openai.api_server" in cmd.entrypoint


def entries(cmd: ServerCommand, version: Version) -> Entries | None:
    """The model entries "non-default args" starts with for ``cmd``, or None where they are the renderer's
    (``model_tag`` and ``model`` both the model: ``vllm serve MODEL``)."""
    out = _model_entries(cmd, version)
    return None if len(out) == 2 and out[0][0] == "model_tag" and out[0][1] == out[1][1] else out


def listed(cmd: ServerCommand, version: Version, taken: Sequence[tuple[str, tuple[str, ...], Any]]) -> Entries | None:
    """:func:`entries`, each option of ``taken`` (argv items the pod started with unmodelled) after them as argparse
    would list it: its dest and the text typed, ``True`` for a word alone (a dotted key's folded JSON is not listed)."""
    if not taken:
        return entries(cmd, version)
    out = list(_model_entries(cmd, version))
    for _name, words, _at in taken:
        head, eq, text = words[0].partition("=")
        if "." in head:
            continue
        value: object = text if eq else words[1] if len(words) == 2 else list(words[1:]) if words[1:] else True
        out.append((head.lstrip("-").replace("-", "_"), value))
    return tuple(out)


def _model_entries(cmd: ServerCommand, version: Version) -> Entries:
    typed = next((o.value for o in reversed(cmd.options) if o.name == "model"), None)
    word = cmd.positionals[0].value if cmd.positionals else None
    if module(cmd):
        tag = word if version >= MODULE_TAG_SINCE else None
        model = typed
    else:
        hoisted = version >= HOISTED_SINCE and typed is not None and word is None
        tag = typed if hoisted else word
        model = tag or typed
    out: list[tuple[str, object]] = []
    if tag is not None:
        out.append(("model_tag", tag))
    if model is not None and model != default_model(version):
        out.append(("model", model))
    return tuple(out)


def rewrite(text: str, found: Entries | None) -> str:
    """``text`` with its "non-default args" model entries replaced by ``found`` (unchanged when None)."""
    if found is None:
        return text
    listed = "".join(f"{k!r}: {v!r}, " for k, v in found)

    def one(m: re.Match[str]) -> str:
        return f"non-default args: {{{listed if m.group(1) else listed.removesuffix(', ')}"

    return _ARGS.sub(one, text)


def module_frames(version: Version) -> list[tuple[str, int, str, str]]:
    """The frames above ``run_server`` when the module runs (Python 3.12's runpy)."""
    line = _MAIN_LINE[max((v for v in _MAIN_LINE if v <= version), default=min(_MAIN_LINE))]
    return [("<frozen runpy>", 198, "_run_module_as_main", ""), ("<frozen runpy>", 88, "_run_code", ""),
            (f"{_SITE}/entrypoints/openai/api_server.py", line, "<module>", "uvloop.run(run_server(args))")]
