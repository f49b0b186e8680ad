"""deploys/budget.py on argv vLLM's argparse reads differently from how it looks (hostile review, argparse round 2):
a flag and its value in one item (``"--max-model-len 16384"``, a common YAML slip) is a positional to argparse
(CPython 3.12 ``_parse_optional``: "if it contains a space, it was meant to be a positional"), left over after the
model tag (``unrecognized arguments``, exit 2); the fix removes the item, never keeps it beside the flag it writes.
A removed stray word is named on the deploy's line, not shown as ``(no change)``."""

from __future__ import annotations

from fixtures import pyinfra_run
from fixtures.budget_world import BUDGET, GOOD_ARGS, LOCAL, with_args
from fixtures.pyinfra_run import Rehearsal
from fixtures.restore_world import host_out, vllm_runtime

rehearsal = pyinfra_run.rehearsal
SPACED = [GOOD_ARGS[0], *GOOD_ARGS[1:3], "--max-model-len 16384", *GOOD_ARGS[5:]]


def test_dry_refuses_a_flag_and_value_in_one_item_and_removes_it(rehearsal: Rehearsal) -> None:
    vllm_runtime(rehearsal)
    rehearsal.change(with_args(SPACED), change_cause="flag and value in one item")
    got = rehearsal.pyinfra(LOCAL, BUDGET, "--dry")
    lines = host_out(got.stderr)
    assert any("(argparse: \"unrecognized arguments: --max-model-len 16384\")" in line for line in lines), lines
    assert "-    - --max-model-len 16384" in lines, lines
    assert "+    - --max-model-len" in lines, lines  # the flag written as two items
    assert "- --max-model-len 16384" not in lines, lines  # never kept as context beside it
    said = "budget deployment llm/llama-8b: --max-model-len 16384 remove the word '--max-model-len 16384'"
    assert any(line.startswith(said) for line in lines), lines


def test_the_line_names_the_word_it_removes(rehearsal: Rehearsal) -> None:
    vllm_runtime(rehearsal)
    rehearsal.change(with_args([GOOD_ARGS[0], "stray", *GOOD_ARGS[1:]]), change_cause="a stray word")
    lines = host_out(rehearsal.pyinfra(LOCAL, BUDGET, "--dry").stderr)
    assert not any("(no change)" in line for line in lines), lines
    assert any("remove the word stray" in line and "budget deployment" in line for line in lines), lines
