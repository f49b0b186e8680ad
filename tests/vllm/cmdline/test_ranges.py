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
