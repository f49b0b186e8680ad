"""A rehearsal pod judges its exec-form argv as vLLM receives it, read through real kubectl's logs.

The kubelet turns ``$$(X)`` into the literal word ``$(X)``; after ``--max-model-len 8192`` it is a second positional,
which ``vllm serve``'s parser leaves over (exit 2, ``unrecognized arguments: $(X)``). The pod used to skip every bare
word holding a ``$`` (a shell script's variable, which it does not expand), so this pod started and served.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from fixtures import sim_world

V = "32"
LLAMA = "meta-llama/Llama-3.1-8B-Instruct"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sim_world.Sim]:
    sim_world.require_kubectl(V)
    s = sim_world.make_sim(tmp_path_factory.mktemp("kubelet-positional"), speed=600, start=True)
    s.clusters["a"].store.create("nodes", sim_world.gpu_node("gpu-1"))
    yield s
    for c in s.clusters.values():
        c.stop()
    s.server.stop()


def _state(world: sim_world.Sim, name: str) -> dict[str, Any]:
    pod = world.clusters["a"].store.find("pods", "llm", name) or {}
    statuses = (pod.get("status") or {}).get("containerStatuses") or [{}]
    return dict(statuses[0])


def test_an_escaped_reference_is_a_stray_positional(world: sim_world.Sim) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "stray", "namespace": "llm"},
           "spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"},
                    "containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.11.0", "command": ["vllm", "serve"],
                                    "args": [LLAMA, "--max-model-len", "8192", "$$(X)"],
                                    "env": [{"name": "X", "value": "--enforce-eager"}],
                                    "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}
    k = world.kubectl
    created = k(V, "create", "-f", "-", stdin=yaml.safe_dump(pod))
    assert created.returncode == 0, created.stderr
    assert world.clusters["a"].wait_for(lambda: int(_state(world, "stray").get("restartCount") or 0) >= 1, 20), \
        _state(world, "stray")
    log = k(V, "-n", "llm", "logs", "stray", "--previous")
    assert log.returncode == 0, log.stderr
    assert log.stdout.splitlines()[-2:] == [  # the top-level parser refuses serve's leftovers (0.11.0's usage)
        "usage: vllm [-h] [-v] {chat,complete,serve,bench,collect-env,run-batch} ...",
        "vllm: error: unrecognized arguments: $(X)"]
    assert (_state(world, "stray").get("lastState") or {}).get("terminated", {}).get("exitCode") == 2
