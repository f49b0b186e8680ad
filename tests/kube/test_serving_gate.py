"""kube.serving over the fake API server: a vLLM container with no readiness or startup probe is Ready when it starts
(hostile review 15b, F8), so the wait holds it until its log shows the serving line, and a restart on the way is a
crash. The logs are the real ones in tests/data/logs, served as ``kubectl logs`` would serve them."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fixtures.kube_fakeapi import FakeApi, started
from vllm_remedy.kube.progress import ProgressReader
from vllm_remedy.kube.serving import ServingGate, port_of, unprobed

LOGS = Path(__file__).resolve().parents[1] / "data" / "logs"
V019 = (LOGS / "v0.19.0_planner_meta_llama_llama_3_1_8b_h100_tp1pp1dp1_16384.log").read_text()
LOADING = V019[:V019.index("Model loading took")]
PROBE = {"httpGet": {"path": "/health", "port": 8000}}


@pytest.fixture
def api(tmp_path: Path) -> Iterator[FakeApi]:
    fake = started(tmp_path, sleep=lambda s: None)
    yield fake
    fake.stop()


def pod(name: str, *, restarts: int = 0, probe: str | None = None, args: tuple[str, ...] = ()) -> dict[str, Any]:
    """A Ready, running pod with a sidecar and a vLLM container (``probe``: which probe the vLLM container has)."""
    vllm: dict[str, Any] = {"name": "vllm", "image": "vllm/vllm-openai:v0.8.5", "command": ["vllm", "serve"],
                            "args": ["meta-llama/Llama-3.1-8B-Instruct", *args]}
    if probe:
        vllm[probe] = dict(PROBE)
    status = {"name": "vllm", "ready": True, "restartCount": restarts, "state": {"running": {}},
              "lastState": {}, "containerID": f"containerd://{name}-{restarts}"}
    return {"metadata": {"name": name, "namespace": "llm", "uid": f"uid-{name}", "creationTimestamp": "t1"},
            "spec": {"nodeName": "gpu-l40s-1", "containers": [{"name": "sidecar", "image": "envoy:1.31"}, vllm]},
            "status": {"phase": "Running", "containerStatuses": [status],
                       "conditions": [{"type": "PodScheduled", "status": "True"},
                                      {"type": "PodReadyToStartContainers", "status": "True"},
                                      {"type": "Ready", "status": "True"}]}}


def gate(api: FakeApi, *pods: dict[str, Any]) -> ServingGate:
    for p in pods:
        api.add("pods", copy.deepcopy(p))
    return ServingGate(api.client, "llm", look=0.0)


def test_only_a_vllm_container_with_neither_probe_is_held(api: FakeApi) -> None:
    assert unprobed(pod("a")) == "vllm"
    assert unprobed(pod("b", probe="readinessProbe")) is None
    assert unprobed(pod("c", probe="startupProbe")) is None
    plain = pod("d")
    plain["spec"]["containers"] = [{"name": "web", "image": "nginx"}]
    assert unprobed(plain) is None  # no vLLM server: kubelet's Ready stands
    assert port_of(pod("e"), "vllm") == "8000" and port_of(pod("f", args=("--port", "9000")), "vllm") == "9000"
    probed = gate(api, pod("b", probe="readinessProbe"))
    assert probed.waiting([pod("b", probe="readinessProbe")]) == [] and not probed.used
    assert [s for s in api.seen if s.path.endswith("/log")] == []  # nothing read for a probed pod


def test_ready_without_a_probe_waits_for_the_serving_line(api: FakeApi) -> None:
    loading = pod("p-1")
    api.logs[("p-1", "vllm", False)] = LOADING
    held = gate(api, loading)
    assert held.waiting([loading]) == ["p-1"] and held.used  # /health through pods/proxy does not answer either
    api.logs[("p-1", "vllm", False)] = V019  # through "Application startup complete"
    assert held.waiting([loading]) == []
    reads = len([s for s in api.seen if s.path.endswith("/log")])
    assert held.waiting([loading]) == [] and len([s for s in api.seen if s.path.endswith("/log")]) == reads  # once


def test_a_restart_before_serving_is_reported_and_the_progress_line_does_not_say_serving(api: FakeApi) -> None:
    first = pod("p-1")
    api.logs[("p-1", "vllm", False)] = LOADING
    held = gate(api, first)
    assert held.restarted([first]) is None
    again = pod("p-1", restarts=1)
    health, container = held.restarted([again]) or (None, None)
    assert health is not None and health.name == "p-1" and container is not None and container.restarts == 1
    stage = ProgressReader(api.client, "llm").read({"spec": {"replicas": 1}}, [first]).stage
    assert stage == "loading weights; Ready without a readiness probe", stage
