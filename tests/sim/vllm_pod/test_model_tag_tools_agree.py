"""The tools' prediction of where the model goes on vLLM's command line, against the rehearsal pod's own reading
(``sim/vllm_pod``: argv, serve_model, read apart from the tools): for each release's refusal, the words `vllm-remedy
check` quotes are the last line the pod prints, and its exit code the one check names. Cases: the api_server module
without a positional before 0.10.0, ``vllm serve --model M`` (a ValueError around argparse, 0.8.3-0.11.0 before it,
to 0.8.0 after it), and ``vllm serve`` without its required model tag before 0.8.3."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client

from fixtures.check_batch import judge, l40s_deployment
from fixtures.served_pods import run, served

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
SERVE = ["vllm", "serve"]
CASES = {  # name: (image tag, command, args)
    "module-0-9-2": ("v0.9.2", None, [LLAMA, "--max-model-len", "8192"]),
    "flag-0-11-0": ("v0.11.0", SERVE, ["--model", LLAMA, "--max-model-len", "8192"]),
    "flag-0-8-0": ("v0.8.0", SERVE, [LLAMA, "--model", LLAMA, "--max-model-len", "8192"]),
    "no-tag-0-7-3": ("v0.7.3", SERVE, ["--model", LLAMA, "--max-model-len", "8192"]),
}


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[client.CoreV1Api]:
    yield from served(tmp_path_factory.mktemp("kube"))


def _dep(name: str, tag: str, command: list[str] | None, args: list[str]) -> dict:
    return l40s_deployment(name, f"vllm/vllm-openai:{tag}", args, command)


def test_check_quotes_the_pods_last_line_and_exit_code(api, tmp_path: Path) -> None:
    items, _ = judge([_dep(name, *case) for name, case in CASES.items()], tmp_path)
    for name, (tag, command, args) in CASES.items():
        log, code = run(api, name, f"vllm/vllm-openai:{tag}", command, args)
        last = re.sub(r"^\(APIServer pid=\d+\) ", "", log.splitlines()[-1])
        said = last.split(": error: ", 1)[1] if ": error: " in last else last  # argparse's message, or the error
        reasons = [f["reason"] for f in items[name]["findings"] if f["check"] == "flags"]
        assert code in (1, 2) and items[name]["prediction"]["outcome"] == "argument_refused", (name, code, log)
        assert any(said in r and f"(exit {code}: the pod never starts)" in r for r in reasons), (name, last, reasons)


def test_from_0_10_0_the_module_takes_a_positional_and_neither_refuses(api, tmp_path: Path) -> None:
    """cli_args.py@0.10.0 gives the api_server module's parser an optional ``model_tag`` (l.214, nargs='?'), which it
    never reads: ``--model`` still names the model. The pod used to refuse the word from 0.11.0 only."""
    args = [LLAMA, "--model", LLAMA, "--max-model-len", "8192"]
    items, _ = judge([_dep("module-0-10-0", "v0.10.0", None, args)], tmp_path)
    assert items["module-0-10-0"]["prediction"]["outcome"] != "argument_refused", items["module-0-10-0"]
    log, code = run(api, "module-0-10-0", "vllm/vllm-openai:v0.10.0", None, args)
    assert code is None, log[-1500:]
