"""A rehearsal pod ends as real vLLM does on two argv slips (hostile review, argparse round 2, findings 1-2): a flag
and its value in one item is a positional to argparse (CPython 3.12 ``_parse_optional``), left over after the model
tag; ``--no-enforce-eager`` where --enforce-eager is ``store_true`` (to 0.8.5) is an unknown option. Both exit 2
``unrecognized arguments``."""

from __future__ import annotations

import pytest

from vllm_remedy.sim.vllm_pod import argv
from vllm_remedy.sim.vllm_pod.launch import Refusal

from .test_argv_shape_refusal import LLAMA, judge, stderr


@pytest.mark.parametrize(("tag", "args", "error"), [
    ("v0.11.0", [LLAMA, "--max-model-len 16384", "--gpu-memory-utilization", "0.9"],
     "unrecognized arguments: --max-model-len 16384"),
    ("v0.8.5", [LLAMA, "--max-model-len", "4096", "--no-enforce-eager"], "unrecognized arguments: --no-enforce-eager"),
    ("v0.8.5", [LLAMA, "--no-trust-remote-code=1"], "unrecognized arguments: --no-trust-remote-code=1"),
])
def test_the_pod_refuses(tag: str, args: list[str], error: str) -> None:
    prog = "vllm" if error.startswith("unrecognized arguments") else "vllm serve"  # leftovers: the top parser's
    assert stderr(judge(tag, *args))[-1] == f"{prog}: error: {error}"


def test_the_negated_form_starts_where_it_exists() -> None:
    got = judge("v0.9.2", LLAMA, "--max-model-len", "4096", "--no-enforce-eager")
    assert not (isinstance(got, Refusal) and got.stage == "argparse"), got


@pytest.mark.parametrize(("version", "refused"), [((0, 8, 5), True), ((0, 9, 2), False), ((0, 34, 0), False)])
def test_the_parsers_negated_forms(version: tuple[int, int, int], refused: bool) -> None:
    got = argv.first_error([], version, negated=[("enforce-eager", "--no-enforce-eager")])
    assert (got.message if got else None) == ("unrecognized arguments: --no-enforce-eager" if refused else None)
