"""cmdline.env: what a launch command does to one variable before vLLM reads it."""

from __future__ import annotations

import pytest

from vllm_remedy.vllm.cmdline import env

X = "VLLM_ALLOW_LONG_MAX_MODEL_LEN"
SERVE = "vllm serve m --max-model-len 65536"


def seen(start: str | None, command: list[str]) -> tuple[str | None, str | None]:
    return env.apply(start, env.changes({"command": command}, X))


@pytest.mark.parametrize(("command", "value"), [
    (["sh", "-c", f"{X}=0 exec {SERVE}"], "0"),
    (["sh", "-c", f"unset {X}; exec {SERVE}"], None),
    (["bash", "-lc", f"set -e\nexport {X}=true\nexec {SERVE}"], "true"),
    (["env", "-u", X, "vllm", "serve", "m"], None),
    (["env", f"--unset={X}", "vllm", "serve", "m"], None),
    (["env", "-i", "PATH=/bin", "vllm", "serve", "m"], None),
    (["env", "-i", f"{X}=1", "vllm", "serve", "m"], "1"),
    (["sh", "-c", f"{X}=0 python3 warmup.py; exec {SERVE}"], "1"),  # scoped to warmup.py
    (["sh", "-c", f"exec {SERVE}; unset {X}"], "1"),  # after vLLM's statement
    (["sh", "-c", f"{X}=0; exec {SERVE}"], "0"),  # already exported by the pod's env: the assignment reaches vLLM
    (["tini", "--", "env", "-u", X, "vllm", "serve", "m"], None),
])
def test_the_value_follows_the_launch_command(command, value):
    assert seen("1", command) == (value, None)


@pytest.mark.parametrize(("command", "why"), [
    (["sh", "-c", f"set -a; {X}=1; exec {SERVE}"], "may set it"),
    (["sh", "-c", f"export {X}=$FLAG; exec {SERVE}"], "expansion"),
    (["sh", "-c", f"read {X} < /etc/f; export {X}; exec {SERVE}"], "names it"),
])
def test_what_the_words_do_not_say_is_unknown(command, why):
    value, reason = seen("1", command)
    assert value is None and reason is not None and why in reason, reason


def test_a_bare_assignment_of_an_unset_variable_is_unknown():
    """`X=1; exec vllm` exports nothing unless X already was: whether vLLM sees it is not in the words."""
    assert seen(None, ["sh", "-c", f"{X}=1; exec {SERVE}"])[1] is not None


# The second hostile review's H1: each checked with dash and bash; none reaches vLLM.
@pytest.mark.parametrize("script", [
    f"false && export {X}=1; exec {SERVE}",
    f"true || export {X}=1; exec {SERVE}",
    f"if false; then export {X}=1; fi; exec {SERVE}",
    f"export {X}=1 | cat; exec {SERVE}",
    f"export {X}=1 & exec {SERVE}",
    f"f() {{ export {X}=1; }}; exec {SERVE}",
    f"( export {X}=1 ); exec {SERVE}",
])
def test_an_export_inside_control_syntax_is_unknown_not_set(script):
    value, reason = seen(None, ["sh", "-c", script])
    assert value is None and reason is not None and "list, pipeline, subshell" in reason


def test_export_n_takes_the_export_away():
    """`export -n X` keeps X a shell variable only (bash): vLLM's process does not see it."""
    assert seen("1", ["bash", "-c", f"export -n {X}; exec {SERVE}"]) == (None, None)


def test_plain_sequences_and_redirections_are_still_followed():
    assert seen(None, ["sh", "-c", f"export {X}=1 2>&1; exec {SERVE} > /tmp/log 2>&1"]) == ("1", None)
    assert seen(None, ["sh", "-c", f"pip install x && exec {SERVE}"]) == (None, None)  # X not named before vLLM
