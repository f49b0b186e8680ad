"""A rehearsal pod whose ``sh -c`` script calls a shell function that reassigns a variable before vLLM (hostile
review 16, G1): sh gives vLLM 0.35 (the function body runs in the calling shell, XCU 2.9.5); the pod used to start
vLLM with the earlier 0.90 and serve. It now refuses with a line saying why, as it does for every word it cannot
expand as sh would; ``vllm-remedy check`` says "cannot predict" for the same script (one real CLI run)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client

from fixtures.check_batch import judge, l40s_deployment
from fixtures.served_pods import run, served

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
SCRIPT = ("tune() { UTIL=0.35; }\nUTIL=0.90\ntune\n"
          f"exec vllm serve {LLAMA} --max-model-len 16384 --gpu-memory-utilization $UTIL --max-num-seqs 64\n")


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[client.CoreV1Api]:
    yield from served(tmp_path_factory.mktemp("kube"))


def test_the_pod_refuses_a_value_a_function_call_reassigns(api: client.CoreV1Api) -> None:
    log, code = run(api, "fn", "vllm/vllm-openai:v0.8.5", ["sh", "-c"], [SCRIPT])
    assert code == 1 and "calls a function the script defines" in log, log[-1500:]
    assert "gpu_memory_utilization=0.9" not in log and "Application startup complete" not in log


def test_check_cannot_predict_it(tmp_path: Path) -> None:
    items, _ = judge([l40s_deployment("fn", "vllm/vllm-openai:v0.8.5", [SCRIPT], ["sh", "-c"])], tmp_path)
    item = items["fn"]
    assert item["status"] != "pass" and item["prediction"]["estimate"] is None, item
    assert any("$UTIL" in f["reason"] for f in item["findings"]), item["findings"]
