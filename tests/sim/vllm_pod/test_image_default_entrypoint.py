"""An args-only container of vLLM's own image runs the image's ENTRYPOINT, which changed with the release: the
vllm-openai stage of docker/Dockerfile ends with ``ENTRYPOINT ["python3", "-m", "vllm.entrypoints.openai.api_server"]``
up to v0.11.0 and ``ENTRYPOINT ["vllm", "serve"]`` from v0.11.1. The module's parser has no model positional before
0.11.0 (``--model`` names the model) and names itself ``api_server.py``; ``vllm serve`` from 0.11.1 moves ``--model M``
to the front as its model tag. Both the rehearsal pod and ``check`` read every args-only image as ``vllm serve``
before: a v0.8.5 container given the model as its first word started there, where the real image exits 2."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from kubernetes import client

from conftest import run_cli
from fixtures.served_pods import run, served
from vllm_remedy.vllm.cmdline import find_server

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
MODULE_LABEL = "image default (python3 -m vllm.entrypoints.openai.api_server)"


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[client.CoreV1Api]:
    yield from served(tmp_path_factory.mktemp("kube"))


def _check(tmp_path: Path, tag: str, args: list[str]) -> dict:
    container = {"name": "vllm", "image": f"vllm/vllm-openai:{tag}", "args": args,
                 "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    doc = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "m", "namespace": "llm"},
           "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "m"}},
                    "template": {"metadata": {"labels": {"app": "m"}},
                                 "spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"},
                                          "containers": [container]}}}}
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump(doc))
    return json.loads(run_cli("check", "-f", str(path), "-o", "json").stdout)["items"][0]


def test_a_v0_8_5_image_runs_the_module_which_has_no_model_positional(api, tmp_path):
    log, code = run(api, "pos-0-8-5", "vllm/vllm-openai:v0.8.5", None, [LLAMA, "--max-model-len", "8192"])
    assert code == 2
    assert log.splitlines()[-1] == f"api_server.py: error: unrecognized arguments: {LLAMA}", log
    item = _check(tmp_path, "v0.8.5", [LLAMA, "--max-model-len", "8192"])
    assert item["prediction"]["outcome"] == "argument_refused"
    assert any(f"unrecognized arguments: {LLAMA}" in f["reason"] for f in item["findings"]), item["findings"]


def test_the_module_takes_the_model_flag_and_refuses_under_its_own_name(api):
    log, code = run(api, "flag-0-11-0", "vllm/vllm-openai:v0.11.0", None, ["--model", LLAMA, "--max-model-len", "8192"])
    assert code is None and "Application startup complete" in log
    log, code = run(api, "bogus-0-9-2", "vllm/vllm-openai:v0.9.2", None, ["--model", LLAMA, "--bogus-flag", "1"])
    assert (code, log.splitlines()[-1]) == (2, "api_server.py: error: unrecognized arguments: --bogus-flag 1")


def test_from_v0_11_1_the_image_runs_vllm_serve(api):
    log, code = run(api, "pos-0-11-1", "vllm/vllm-openai:v0.11.1", None, [LLAMA, "--max-model-len", "8192"])
    assert code is None and "Application startup complete" in log
    log, code = run(api, "hoist-0-12-0", "vllm/vllm-openai:v0.12.0", None, ["--model", LLAMA, "--bogus-flag", "1"])
    assert code == 2
    assert log.splitlines()[-2:] == ["usage: vllm [-h] [-v] {chat,complete,serve,bench,collect-env,run-batch} ...",
                                     "vllm: error: unrecognized arguments: --bogus-flag 1"], log  # vllm's parser


@pytest.mark.parametrize(("image", "label"), [
    ("vllm/vllm-openai:v0.11.0", MODULE_LABEL), ("docker.io/vllm/vllm-openai:v0.8.5.post1", MODULE_LABEL),
    ("vllm/vllm-openai:v0.11.1", "image default"), ("vllm/vllm-openai:latest", "image default"),
    ("myorg/vllm:0.8.5", "image default"),  # another image's ENTRYPOINT is not vLLM's to read
])
def test_the_tools_read_the_image_default_by_release(image, label):
    server = find_server({"containers": [{"name": "vllm", "image": image, "args": ["--model", LLAMA]}]})
    assert (server.entrypoint, server.model) == (label, LLAMA)
