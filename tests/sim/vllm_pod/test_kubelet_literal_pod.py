"""A rehearsal pod gets its argv as the kubelet's ``$(VAR)`` expansion hands it on, read through real kubectl's logs.

The kubelet (``expansion.Expand``) replaces ``$(name)`` whatever the name holds, so a ConfigMap key with dashes brought
in by ``envFrom`` (``$(max-model-len)``) is expanded, while ``$$(MML)`` reaches vLLM as the literal ``$(MML)``, which
argparse refuses. The pod used to keep the dashed reference as written (refusing a start Kubernetes lets run), and a
second reading of its already expanded argv would have turned the escaped ``$(MML)`` into 8192.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from fixtures import sim_world
from vllm_remedy.vllm.startup_log import parse_startup_log

V = "32"
LLAMA = "meta-llama/Llama-3.1-8B-Instruct"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sim_world.Sim]:
    sim_world.require_kubectl(V)
    s = sim_world.make_sim(tmp_path_factory.mktemp("kubelet-literal"), speed=600, start=True)
    s.clusters["a"].store.create("nodes", sim_world.gpu_node("gpu-1"))
    yield s
    for c in s.clusters.values():
        c.stop()
    s.server.stop()


def _pod(name: str, args: list[str], **container: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "llm"},
            "spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"},
                     "containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.11.0", "command": ["vllm", "serve"],
                                     "args": [LLAMA, *args], "resources": {"limits": {"nvidia.com/gpu": "1"}},
                                     "ports": [{"containerPort": 8000}],
                                     "readinessProbe": {"httpGet": {"path": "/health", "port": 8000}},
                                     **container}]}}


def _state(world: sim_world.Sim, name: str) -> dict[str, Any]:
    pod = world.clusters["a"].store.find("pods", "llm", name) or {}
    statuses = (pod.get("status") or {}).get("containerStatuses") or [{}]
    return dict(statuses[0])


def test_the_pod_reads_its_argv_as_the_kubelet_expands_it(world):
    k = world.kubectl
    settings = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "vllm-settings", "namespace": "llm"},
                "data": {"max-model-len": "8192"}}
    dashed = _pod("dashed", ["--max-model-len=$(max-model-len)"],
                  envFrom=[{"configMapRef": {"name": "vllm-settings"}}])
    escaped = _pod("escaped", ["--max-model-len", "$$(MML)"], env=[{"name": "MML", "value": "8192"}])
    created = k(V, "create", "-f", "-", stdin=yaml.safe_dump_all([settings, dashed, escaped]))
    assert created.returncode == 0, created.stderr
    cluster = world.clusters["a"]
    assert cluster.wait_for(lambda: _state(world, "dashed").get("ready") is True, 20), _state(world, "dashed")
    assert _state(world, "dashed").get("restartCount") == 0
    log = k(V, "-n", "llm", "logs", "dashed")
    assert log.returncode == 0, log.stderr
    assert parse_startup_log(log.stdout).max_model_len == 8192
    assert cluster.wait_for(lambda: int(_state(world, "escaped").get("restartCount") or 0) >= 1, 20), \
        _state(world, "escaped")
    log = k(V, "-n", "llm", "logs", "escaped", "--previous")
    assert log.returncode == 0, log.stderr
    assert log.stdout.splitlines()[-2:] == [
        "usage: vllm serve [model_tag] [options]",
        "vllm serve: error: argument --max-model-len: invalid human_readable_int value: '$(MML)'"]
