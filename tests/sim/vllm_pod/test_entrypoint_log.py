"""The rehearsal pod's log follows the entrypoint actually run (``sim/vllm_pod/entry_log``): "non-default args" lists
what ``log_non_default_args`` finds in that entrypoint's Namespace, and the api_server module's traceback starts in
runpy. Before, the module given the model as a word logged ``'model_tag': 'facebook/opt-125m'``, dropped --revision
and --max-num-seqs, listed the default utilization 0.9 and showed a ``vllm serve`` traceback; ``vllm serve --model=M``
on 0.11.0 logged ``'model_tag': M`` where vLLM's tag is None."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kubernetes import client

from fixtures.served_pods import run, served

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
REV = "0e9e39f249a16976918f6564b8830bc894c89659"


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[client.CoreV1Api]:
    yield from served(tmp_path_factory.mktemp("kube"))


def _args_line(log: str) -> str:
    return next(line for line in log.splitlines() if "non-default args:" in line).split("non-default args: ", 1)[1]


def test_the_module_logs_its_ignored_tag_and_runpy_frames(api: client.CoreV1Api) -> None:
    args = [LLAMA, "--revision", REV, "--gpu-memory-utilization", "0.9", "--max-num-seqs", "64",
            "--max-model-len", "16384"]
    log, code = run(api, "module-0-10-0", "vllm/vllm-openai:v0.10.0", None, args)
    assert code == 1, log[-2000:]
    assert _args_line(log) == (f"{{'model_tag': '{LLAMA}', 'revision': '{REV}', 'max_model_len': 16384, "
                               "'max_num_seqs': 64}"), log
    assert 'File "<frozen runpy>", line 198, in _run_module_as_main' in log, log
    assert "/usr/local/bin/vllm" not in log and "cli/serve.py" not in log, log
    assert "entrypoints/openai/api_server.py\", line 1856, in <module>" in log, log


def test_serve_model_equals_form_logs_model_without_tag(api: client.CoreV1Api) -> None:
    log, code = run(api, "flag-eq-0-11-0", "vllm/vllm-openai:v0.11.0", ["vllm", "serve"],
                    [f"--model={LLAMA}", "--max-model-len", "8192"])
    assert code is None, log[-2000:]
    assert _args_line(log) == f"{{'model': '{LLAMA}', 'max_model_len': 8192}}", log


def test_serve_with_the_word_keeps_both(api: client.CoreV1Api) -> None:
    log, code = run(api, "word-0-11-0", "vllm/vllm-openai:v0.11.0", ["vllm", "serve"],
                    [LLAMA, "--max-model-len", "8192"])
    assert code is None, log[-2000:]
    assert _args_line(log) == f"{{'model_tag': '{LLAMA}', 'model': '{LLAMA}', 'max_model_len': 8192}}", log


def test_the_module_serves_its_default_model_when_given_only_a_word(api: client.CoreV1Api) -> None:
    """From 0.10.0 the module takes the word and ignores it: vLLM loads ModelConfig.model, Qwen/Qwen3-0.6B
    (config.py@0.10.0 l.231), and serves it. The pod refused it as an unknown model while it was not in the catalog."""
    log, code = run(api, "module-default-0-10-0", "vllm/vllm-openai:v0.10.0", None, [LLAMA, "--max-model-len", "16384"])
    assert code is None, log[-2000:]
    assert "model='Qwen/Qwen3-0.6B'" in log and "Starting to load model Qwen/Qwen3-0.6B..." in log, log
