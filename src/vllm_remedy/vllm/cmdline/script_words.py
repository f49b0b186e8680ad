"""The vLLM words of an ``sh -c`` script as the shell hands them to vLLM, where the tools can tell (``script_vars``).

`MODEL=meta-llama/Llama-3.1-8B-Instruct` on its own line, then `exec vllm serve "$MODEL"`: sh expands the word to the
repository id, and so do the tools, the same way the rehearsal pod does — a word read so is literal
(``ServerCommand.literal``), at its place in the script (an edit rewrites it there). The kubelet expands `$(VAR)` in
the script's text first (``kubelet_env``); a word that expansion changes, one that expands to several fields or none
(`$ARGS` holding two flags: ``ServerCommand.hidden``) and one this reading cannot know stay as written.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from vllm_remedy.vllm.cmdline import script_vars
from vllm_remedy.vllm.cmdline.kubelet_env import environment, expand_arg
from vllm_remedy.vllm.cmdline.parse import Token


def received(container: Mapping[str, Any], script: Token, rest: list[Token]) -> tuple[list[Token], frozenset[Token]]:
    """``rest`` (the vLLM statement's words) with each script word the shell expands to one known field replaced
    by that field, and the set of words so read."""
    where = (script.field, script.index)
    if not any(t.raw and (t.field, t.index) == where and script_vars.expands(t.raw) for t in rest):
        return rest, frozenset()
    known, opaque = environment(container, {})
    table = script_vars.Table(expand_arg(container, script.value), known, opaque)
    out: list[Token] = []
    literal: set[Token] = set()
    for t in rest:
        got = (script_vars.expand(t.raw, table) if t.raw and (t.field, t.index) == where
               and script_vars.expands(t.raw) and expand_arg(container, t.raw) == t.raw else None)
        if not isinstance(got, list) or len(got) != 1:
            out.append(t)
            continue
        word = dataclasses.replace(t, value=got[0])
        out.append(word)
        literal.add(word)
    return out, frozenset(literal)
