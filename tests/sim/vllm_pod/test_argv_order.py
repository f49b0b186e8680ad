"""A rehearsal pod refuses its argv where argparse stops: at the first option in argv order that it refuses, whatever
kind the refusal is (hostile review 13, finding 11). ``m --max-model-len abc --enforce-eager=1`` is refused for
``abc``, not for the boolean's explicit value; before, every ``--flag=text`` boolean was judged first. Each case is
also run through this interpreter's own argparse on a parser of the same shape, which must stop at the same option."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from vllm_remedy.sim.vllm_pod.launch import Refusal

from .test_argv_shape_refusal import LLAMA, judge, stderr


class _StoreBoolean(argparse.Action):
    """vLLM's legacy StoreBoolean (utils.py@0.8.3): true/false, else a ValueError argparse does not catch."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: str | None = None) -> None:
        if values.lower() not in ("true", "false"):
            raise ValueError(f"Invalid boolean value: {values}. Expected 'true' or 'false'.")


def _stops_at(args: list[str]) -> str:
    """The option CPython's argparse stops at on a parser shaped like vLLM's for these flags."""
    parser = argparse.ArgumentParser(prog="vllm serve", exit_on_error=False)
    parser.add_argument("model_tag", nargs="?")
    for flag in ("--max-model-len", "--max-num-seqs"):
        parser.add_argument(flag, type=int)
    parser.add_argument("--dtype", choices=["auto", "half"])
    parser.add_argument("--enforce-eager", action=argparse.BooleanOptionalAction)
    parser.add_argument("--enable-chunked-prefill", action=_StoreBoolean, nargs="?", const="True")
    try:
        parser.parse_known_args(args)
    except argparse.ArgumentError as err:
        return str(err.argument_name).split("/")[0]
    except ValueError:
        return "--enable-chunked-prefill"
    return ""


CASES = [  # (tag, args, the option argparse stops at, the end of the pod's last stderr line)
    ("v0.30.0", [LLAMA, "--max-model-len", "abc", "--enforce-eager=1"], "--max-model-len",
     "argument --max-model-len: invalid human_readable_int_or_auto value: 'abc'"),
    ("v0.30.0", [LLAMA, "--enforce-eager=1", "--max-model-len", "abc"], "--enforce-eager",
     "argument --enforce-eager/--no-enforce-eager: ignored explicit argument '1'"),
    ("v0.11.0", [LLAMA, "--dtype", "float17", "--enforce-eager=true"], "--dtype",
     "argument --dtype: invalid choice: 'float17' (choose from 'auto', 'bfloat16', 'float', 'float16', 'float32', "
     "'half')"),
    ("v0.11.0", [LLAMA, "--max-model-len", "--enforce-eager=true"], "--max-model-len",
     "argument --max-model-len: expected one argument"),
    ("v0.11.0", [LLAMA, "--enforce-eager=true", "--max-model-len"], "--enforce-eager",
     "argument --enforce-eager/--no-enforce-eager: ignored explicit argument 'true'"),
    ("v0.11.0", [LLAMA, "--max-num-seqs", "x", "--enforce-eager=true", "extra"], "--max-num-seqs",
     "argument --max-num-seqs: invalid int value: 'x'"),
    # a StoreBoolean's second occurrence raises, after the earlier bad value is refused
    ("v0.7.3", [LLAMA, "--enable-chunked-prefill=true", "--max-model-len", "abc", "--enable-chunked-prefill=yes"],
     "--max-model-len", "argument --max-model-len: invalid int value: 'abc'"),
]


@pytest.mark.parametrize(("tag", "args", "stops", "error"), CASES)
def test_the_pod_stops_where_argparse_does(tag: str, args: list[str], stops: str, error: str) -> None:
    assert _stops_at(args) == stops
    assert stderr(judge(tag, *args))[-1] == f"vllm serve: error: {error}"


def test_a_script_is_judged_in_its_own_order() -> None:
    """A shell's argv: the launch hands over the value-less options first; the pod orders them by where they stand."""
    got = judge("v0.11.0", f"exec vllm serve {LLAMA} --max-num-seqs x --dtype", command=["/bin/sh", "-c"])
    assert _stops_at([LLAMA, "--max-num-seqs", "x", "--dtype"]) == "--max-num-seqs"
    assert stderr(got)[-1] == "vllm serve: error: argument --max-num-seqs: invalid int value: 'x'"


def test_a_store_boolean_before_a_bad_value_raises_first() -> None:
    args = [LLAMA, "--enable-chunked-prefill=yes", "--max-model-len", "abc"]
    got = judge("v0.7.3", *args)
    assert _stops_at(args) == "--enable-chunked-prefill"
    assert isinstance(got, Refusal) and got.stage == "cli", got
    assert got.error.endswith("Invalid boolean value: yes. Expected 'true' or 'false'."), got.error
