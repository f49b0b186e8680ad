"""Sanity bounds for flags the memory model does not type: every port-typed flag of the table, counts, sizes."""

from __future__ import annotations

import pytest

from vllm_remedy.vllm.cmdline import ranges


def test_every_port_flag_of_the_table_is_judged_as_a_port() -> None:
    ports = {"port", "master-port", "grpc-port", "data-parallel-rpc-port", "data-parallel-supervisor-port"}
    assert ports == ranges.PORTS
    for name in ranges.PORTS:
        assert ranges.check(name, "8000") is None and ranges.check(name, "65535") is None
        assert ranges.check(name, "65536") == "'65536' is not a TCP port (1-65535)"


@pytest.mark.parametrize(("name", "value", "wrong"), [
    ("max-loras", "-1", "-1 must not be negative"),
    ("max-loras", "1.5", "'1.5' is not an integer"),
    ("num-speculative-tokens", "-3", "-3 must not be negative"),
    ("swap-space", "-1", "-1 must not be negative"),
    ("cpu-offload-gb", "2.5", None),
    ("kv-offloading-size", "-0.5", "-0.5 must not be negative"),
    ("max-num-batched-tokens", "16k", None),
    ("max-logprobs", "-1", None),  # -1: no limit
    ("max-model-len", "-1", None),  # the memory model's to judge ("auto")
    ("default-mm-loras", '{"image": "x"}', None),
    ("served-model-name", "-1", None),  # not a count: vLLM's own type decides
])
def test_counts_are_numbers_and_never_negative(name: str, value: str, wrong: str | None) -> None:
    assert ranges.check(name, value) == wrong


@pytest.mark.parametrize(("name", "value", "wrong"), [
    ("max-model-len", "99999999999999999999", "99999999999999999999 is too large (at most 2147483647)"),
    ("max-model-len", "2147483647", None),
    ("max-model-len", "16k", None),  # vLLM's human_readable_int: 16000
    ("max-model-len", "3000000k", "3000000k is too large (at most 2147483647)"),
    ("max-num-batched-tokens", "2147483648", "2147483648 is too large (at most 2147483647)"),
])
def test_integers_beyond_int32_are_refused(name: str, value: str, wrong: str | None) -> None:
    assert ranges.check(name, value) == wrong


def test_spaces_around_a_value_are_named() -> None:
    assert ranges.spacing(" 4096") == "' 4096' has spaces around it"
    assert ranges.spacing("4096") is None and ranges.spacing("a b") is None
