"""A rehearsal pod run with ``vllm serve --headless`` behaves as the release does (hostile review 16, G6): vLLM 0.10.1
(``entrypoints/cli/serve.py``: ``if args.headless or args.api_server_count < 1: run_headless(args)``) logs its
headless line and waits for the head node; no API server line, no "Application startup complete", no ``/health``.
The rehearsal pod used to start an API server and serve."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from fixtures.served_pods import served

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[client.CoreV1Api]:
    yield from served(tmp_path_factory.mktemp("kube"))


def _pod(api: client.CoreV1Api, name: str, args: list[str]) -> None:
    container = {"name": "vllm", "image": "vllm/vllm-openai:v0.10.1", "command": ["vllm", "serve"], "args": args,
                 "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    api.create_namespaced_pod("llm", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                                      "spec": {"containers": [container]}})


def _log_once(api: client.CoreV1Api, name: str, marker: str, seconds: float = 30) -> str:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            log = api.read_namespaced_pod_log(name, "llm", container="vllm")
        except ApiException:
            log = ""
        if marker in log:
            return log
        time.sleep(0.2)
    raise AssertionError(f"{marker!r} never logged by {name}")


@pytest.mark.parametrize("flags", [["--headless"], ["--api-server-count", "0"]])
def test_a_headless_pod_logs_the_headless_line_and_never_serves(api: client.CoreV1Api, flags: list[str]) -> None:
    name = "hl" if flags == ["--headless"] else "hl0"
    _pod(api, name, [LLAMA, "--max-model-len", "16384", "--gpu-memory-utilization", "0.90", *flags,
                     "--data-parallel-size", "1", "--data-parallel-address", "10.0.0.9"])
    log = _log_once(api, name, "in headless mode")
    assert re.fullmatch(r"INFO \d\d-\d\d \d\d:\d\d:\d\d \[serve\.py:111\] Launching 1 data parallel engine\(s\) in "
                        r"headless mode, with head node address tcp://10\.0\.0\.9:29550\.", log.strip()), log
    time.sleep(1.0)  # past when a serving pod would have said so (speed 600: minutes of cluster time)
    log = api.read_namespaced_pod_log(name, "llm", container="vllm")
    assert "Application startup complete" not in log and "API server" not in log and "non-default args" not in log
    status = api.read_namespaced_pod(name, "llm").status.container_statuses[0]
    assert status.state.running is not None and status.restart_count == 0  # waits for its head node
    with pytest.raises(ApiException):
        api.connect_get_namespaced_pod_proxy_with_path(name, "llm", "health:8000")
