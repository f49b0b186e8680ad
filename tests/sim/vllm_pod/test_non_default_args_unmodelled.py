"""A rehearsal pod of a release past the newest read (vllm/vllm-openai:v0.35.0) that starts with an option no release
read had lists it under "non-default args", as real vLLM lists every option the command line sets
(``log_non_default_args``): under its dest, with the text typed (``'foo_bar': '1'``; ``True`` for a word alone), after
the model entries. Its line used to leave it out, as if the option had not been given. Through the served rehearsal
cluster and the official ``kubernetes`` client."""

from __future__ import annotations

import ast
from collections.abc import Iterator

import pytest
from kubernetes import client

from fixtures.served_pods import run, served

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[client.CoreV1Api]:
    yield from served(tmp_path_factory.mktemp("kube"))


def _listed(log: str) -> dict[str, object]:
    [line] = [line for line in log.splitlines() if "non-default args: " in line]
    return ast.literal_eval(line.partition("non-default args: ")[2])


def test_the_options_it_took_are_listed_under_their_dest(api):
    log, code = run(api, "foo-args", "vllm/vllm-openai:v0.35.0", ["vllm", "serve"],
                    [LLAMA, "--max-model-len", "16384", "--foo-bar", "1", "-xyz", "--baz_qux=q"])
    assert code is None, log  # it serves
    args = _listed(log)
    assert list(args)[:5] == ["model_tag", "model", "foo_bar", "xyz", "baz_qux"], args
    assert (args["foo_bar"], args["xyz"], args["baz_qux"], args["max_model_len"]) == ("1", True, "q", 16384), args


def test_without_such_an_option_the_line_is_as_before(api):
    log, code = run(api, "known-args", "vllm/vllm-openai:v0.35.0", ["vllm", "serve"],
                    [LLAMA, "--max-model-len", "16384"])
    assert code is None, log
    assert list(_listed(log))[:3] == ["model_tag", "model", "max_model_len"], log
