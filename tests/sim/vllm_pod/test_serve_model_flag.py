"""``vllm serve`` and its model, as each release's CLI reads them, through the served rehearsal cluster and the
official ``kubernetes`` client. ``--model M`` (the exact word) raised ValueError before argparse in 0.8.3-0.11.0
(utils.py@0.8.5 ``any(arg == '--model' for arg in args)``) and in ``serve`` after it to 0.8.0 (scripts.py@0.6.6), a
traceback and exit 1; ``--model=M`` passed 0.8.3-0.11.0. The model tag was required to 0.8.0, and the usage line said
``<model_tag>`` (scripts.py@0.6.6, entrypoints/cli/serve.py@0.7.3). The pod started all of these."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kubernetes import client

from fixtures.served_pods import run, served

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
SERVE = ["vllm", "serve"]


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[client.CoreV1Api]:
    yield from served(tmp_path_factory.mktemp("kube"))


def test_model_flag_on_0_9_2_is_refused_before_argparse(api):
    log, code = run(api, "model-0-9-2", "vllm/vllm-openai:v0.9.2", SERVE, ["--model", LLAMA, "--max-model-len", "8192"])
    assert code == 1
    lines = log.splitlines()
    assert lines[0] == "Traceback (most recent call last):" and lines[-1] == (
        "ValueError: With `vllm serve`, you should provide the model as a positional argument or in a config file "
        "instead of via the `--model` option."), log
    assert '/vllm/utils/__init__.py", line 1478, in parse_args' in log, log


def test_model_flag_with_equals_on_0_9_2_serves(api):
    log, code = run(api, "model-eq-0-9-2", "vllm/vllm-openai:v0.9.2", SERVE, [f"--model={LLAMA}", "--max-model-len",
                                                                              "8192"])
    assert code is None and "Application startup complete" in log


def test_model_flag_on_0_6_6_is_refused_by_serve(api):
    log, code = run(api, "model-0-6-6", "vllm/vllm-openai:v0.6.6", SERVE, [LLAMA, "--model", LLAMA])
    assert code == 1
    assert log.splitlines()[-1] == ("ValueError: With `vllm serve`, you should provide the model as a positional "
                                    "argument instead of via the `--model` option."), log
    assert '/vllm/scripts.py", line 35, in serve' in log, log


def test_the_model_tag_is_required_to_0_8_0(api):
    log, code = run(api, "tag-0-7-3", "vllm/vllm-openai:v0.7.3", SERVE, ["--max-model-len", "8192"])
    assert code == 2
    assert log.splitlines() == ["usage: vllm serve <model_tag> [options]",
                                "vllm serve: error: the following arguments are required: model_tag"], log
