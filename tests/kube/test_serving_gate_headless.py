"""A vLLM container run with ``--headless`` (a data-parallel engine node, no API server: ``run_headless`` in
``entrypoints/cli/serve.py`` from vLLM 0.9.0) never logs a serving line nor answers ``/health`` (hostile review 16,
G6); the probe-less wait used to hold it until the rollout timed out. It now counts it as started once the same
container instance has run ``settle`` real seconds unrestarted, and says so."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fixtures.kube_fakeapi import FakeApi, started
from vllm_remedy.kube.serving import HEADLESS_NOTE, ServingGate, headless

HEADLESS_LOG = ("INFO 12-06 15:00:01 [serve.py:112] Launching 1 data parallel engine(s) in headless mode, with head "
                "node address tcp://10.0.0.5:13345.\n")


def pod(name: str, *, restarts: int = 0, args: tuple[str, ...] = ()) -> dict[str, Any]:
    """A Ready, running pod whose vLLM container has no probe (a restart is a new containerID, as kubelet gives)."""
    vllm = {"name": "vllm", "image": "vllm/vllm-openai:v0.10.1", "command": ["vllm", "serve"],
            "args": ["meta-llama/Llama-3.1-8B-Instruct", *args]}
    status = {"name": "vllm", "ready": True, "restartCount": restarts, "state": {"running": {}}, "lastState": {},
              "containerID": f"containerd://{name}-{restarts}"}
    return {"metadata": {"name": name, "namespace": "llm", "uid": f"uid-{name}", "creationTimestamp": "t1"},
            "spec": {"nodeName": "gpu-l40s-1", "containers": [vllm]},
            "status": {"phase": "Running", "containerStatuses": [status],
                       "conditions": [{"type": "Ready", "status": "True"}]}}


@pytest.fixture
def api(tmp_path: Path) -> Iterator[FakeApi]:
    fake = started(tmp_path, sleep=lambda s: None)
    yield fake
    fake.stop()


def test_headless_and_api_server_count_0_are_told_apart() -> None:
    assert headless(pod("a", args=("--headless",)), "vllm")
    assert headless(pod("b", args=("--api-server-count", "0")), "vllm")
    assert not headless(pod("c"), "vllm") and not headless(pod("d", args=("--api-server-count", "2")), "vllm")


def test_a_headless_engine_counts_as_started_after_settling_unrestarted(api: FakeApi) -> None:
    now = [100.0]
    engine = pod("hl-1", args=("--headless", "--data-parallel-size", "1"))
    api.logs[("hl-1", "vllm", False)] = HEADLESS_LOG
    api.add("pods", copy.deepcopy(engine))
    gate = ServingGate(api.client, "llm", look=0.0, real=lambda: now[0], settle=30.0)
    assert gate.waiting([engine]) == ["hl-1"]  # just started: not yet
    now[0] += 29.0
    assert gate.waiting([engine]) == ["hl-1"]
    restarted = pod("hl-1", restarts=1, args=("--headless", "--data-parallel-size", "1"))
    now[0] += 5.0
    assert gate.waiting([restarted]) == ["hl-1"]  # a new container instance: its own settle time
    now[0] += 30.0
    assert gate.waiting([restarted]) == []
    note = gate.NOTE
    assert note == HEADLESS_NOTE.format(settle=30) and "serving line" not in note
    assert [s for s in api.seen if "/proxy/" in s.path] == []  # /health is never asked of a headless engine
