"""A legacy StoreBoolean flag followed by the model or another word (releases 0.5.5-0.8.3): argparse gives the flag
that word (``nargs='?'``, no type or choices: engine/arg_utils.py@0.5.5, utils.py@0.6.5-@0.8.3) and StoreBoolean raises
``ValueError: Invalid boolean value: ...`` (a traceback, exit 1), before any leftover or the missing model tag is
reported. Before, the pod served the model (it took the word as the model tag)."""

from __future__ import annotations

from datetime import datetime

import pytest

from vllm_remedy.sim.vllm_pod import argv_boolean, timeline
from vllm_remedy.sim.vllm_pod.launch import Launch, Refusal

from .test_argv_shape_refusal import LLAMA, judge, stderr


def _traceback(got: Launch | Refusal) -> tuple[str, ...]:
    assert isinstance(got, Refusal) and got.stage == "cli", got
    run = timeline.plan_refusal(got, datetime(2026, 1, 1))
    assert run.exit is not None and run.exit.code == 1
    return run.exit.log


def _invalid(word: str) -> str:
    return f"ValueError: Invalid boolean value: {word}. Expected 'true' or 'false'."


@pytest.mark.parametrize(("tag", "args", "word"), [
    ("v0.8.0", ["--enable-chunked-prefill", LLAMA, "--max-model-len", "4096"], LLAMA),  # model_tag required
    ("v0.8.3", ["--enable-chunked-prefill", LLAMA], LLAMA),  # model_tag nargs='?'
    ("v0.5.5", ["--disable-logprobs-during-spec-decoding", LLAMA], LLAMA),  # engine/arg_utils.py's own class
    ("v0.7.3", [LLAMA, "--enable-chunked-prefill", "yes"], "yes"),
    ("v0.7.3", [LLAMA, "--enable_chunked_prefill=1"], "1"),  # FlexibleArgumentParser: _ to -, the text kept
    ("v0.8.3", [LLAMA, "--multi-step-stream-outputs", "-1"], "-1"),  # a negative number is a value to argparse
])
def test_the_flag_takes_the_word_and_raises(tag, args, word):
    log = _traceback(judge(tag, *args))
    assert log[0] == "Traceback (most recent call last):" and log[-1] == _invalid(word), log
    assert any("in __call__" in line for line in log), log


def test_the_traceback_has_the_releases_frames():
    log = _traceback(judge("v0.6.3", "--enable-chunked-prefill", LLAMA))
    site = "/usr/local/lib/python3.12/dist-packages/vllm"
    assert f'  File "{site}/scripts.py", line 189, in main' in log, log
    assert f'  File "{site}/engine/arg_utils.py", line 1127, in __call__' in log, log


@pytest.mark.parametrize(("tag", "args"), [
    ("v0.8.0", ["--enable-chunked-prefill", "true", LLAMA, "--max-model-len", "4096"]),  # the word is its value
    ("v0.8.0", ["--enable-chunked-prefill", "--max-model-len", "4096", LLAMA]),  # an option next: const "True"
    ("v0.6.2", ["--multi-step-stream-outputs", LLAMA, "--max-model-len", "4096"]),  # store_true there
    ("v0.8.0", ["--enable-prefix-caching", LLAMA, "--max-model-len", "4096"]),  # store_true
])
def test_no_refusal_where_the_flag_takes_no_such_word(tag, args):
    got = judge(tag, *args)
    assert not (isinstance(got, Refusal) and got.stage in ("cli", "argparse")), got


def test_an_earlier_argparse_refusal_comes_first():
    got = judge("v0.8.0", LLAMA, "--max-model-len", "16Ki", "--enable-chunked-prefill", "on")
    assert isinstance(got, Refusal) and got.stage == "argparse", got
    assert "invalid int value: '16Ki'" in got.error, got.error


def test_the_module_entrypoint_raises_it_too():
    got = judge("v0.7.2", "--model", LLAMA, "--enable-chunked-prefill", "no",
                command=["python3", "-m", "vllm.entrypoints.openai.api_server"])
    log = _traceback(got)
    assert log[-1] == _invalid("no") and any("api_server.py\", line 908, in <module>" in line for line in log), log
    assert argv_boolean.raised(["--enable-chunked-prefill", "no"], (0, 8, 5)) is None  # a BooleanOptionalAction


@pytest.mark.parametrize(("tag", "args", "command", "left"), [
    ("v0.8.5", ["--enable-chunked-prefill", "true", LLAMA, "--max-model-len", "4096"], None, LLAMA),  # tag "true"
    ("v0.12.0", ["--model", LLAMA, "--enable-chunked-prefill", "false"], None, "false"),  # --model is the tag
    ("v0.9.2", ["--model", LLAMA, "--enable-chunked-prefill", "false"],
     ["python3", "-m", "vllm.entrypoints.openai.api_server"], "false"),  # no positional at all
])
def test_true_false_is_a_positional_where_the_flag_takes_none(tag, args, command, left):
    assert stderr(judge(tag, *args, command=command))[-1].endswith(f"error: unrecognized arguments: {left}")
