"""cmdline.env: a `(`, `|` or `&` inside a word before vLLM — `echo "starting $(date)" >&2`, a quoted `a|b`, a comment
— is no control syntax: an `export` next to it still reaches vLLM (hostile review 15b, F7's script made every variable
set before vLLM "unknown"). Control syntax between words still makes it unknown (``test_env``)."""

from __future__ import annotations

import pytest

from vllm_remedy.vllm.cmdline import env

X = "VLLM_ALLOW_LONG_MAX_MODEL_LEN"
SERVE = "vllm serve m --max-model-len 65536"


@pytest.mark.parametrize("first", ['echo "starting $(date)" >&2', "echo 'a|b (c) & d'", "# set up (then serve)",
                                   "echo `date`"])
def test_an_export_after_a_word_with_parentheses_reaches_vllm(first: str) -> None:
    script = f"{first}\nexport {X}=1\nexec {SERVE}\n"
    assert env.apply(None, env.changes({"command": ["sh", "-c", script]}, X)) == ("1", None)


def test_a_subshell_between_words_is_still_control() -> None:
    script = f'echo "starting $(date)"\n( export {X}=1 )\nexec {SERVE}\n'
    value, reason = env.apply(None, env.changes({"command": ["sh", "-c", script]}, X))
    assert value is None and reason is not None and "list, pipeline, subshell" in reason
