"""deploys/budget.py on a manifest vLLM's argparse refuses (hostile review, argv finding 3): the deploy plans it as
``plan -f`` and ``check`` read it, the refusal in argparse's words and the flag planned without, never a bad-input
stop on typing the value (``dtype: 'float17' is not one of ...``)."""

from __future__ import annotations

from fixtures import pyinfra_run
from fixtures.budget_world import BUDGET, GOOD_ARGS, LOCAL, with_args
from fixtures.pyinfra_run import Rehearsal
from fixtures.restore_world import host_out, vllm_runtime

rehearsal = pyinfra_run.rehearsal


def test_dry_plans_a_value_outside_the_choices_as_an_argparse_refusal(rehearsal: Rehearsal) -> None:
    vllm_runtime(rehearsal)
    rehearsal.change(with_args([*GOOD_ARGS, "--dtype", "float17"]), change_cause="a dtype no release has")
    got = rehearsal.pyinfra(LOCAL, BUDGET, "--dry")
    lines = host_out(got.stderr)
    assert not any("is not one of" in line for line in lines), lines
    assert any("refuses --dtype float17 at argument parsing (argparse: \"argument --dtype: invalid choice: "
               "'float17'" in line for line in lines), lines


def test_dry_removes_a_stray_word_as_plan_says(rehearsal: Rehearsal) -> None:
    vllm_runtime(rehearsal)
    rehearsal.change(with_args([GOOD_ARGS[0], "extra", *GOOD_ARGS[1:]]), change_cause="a stray word")
    got = rehearsal.pyinfra(LOCAL, BUDGET, "--dry")
    lines = host_out(got.stderr)
    assert any("remove the word extra (planned without it)" in line for line in lines), lines
    assert "-    - extra" in lines, lines
    assert not any("--extra" in line for line in lines), lines
