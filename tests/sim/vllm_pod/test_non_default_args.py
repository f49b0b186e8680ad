"""The rehearsal's pods list only flags the command line sets under "non-default args" (hostile review 2026-12-05).

A real 0.22.1 / 0.27.1 log with --gpu-memory-utilization unset lists no 'gpu_memory_utilization' there (the 0.92
appears only in "The current --gpu-memory-utilization=0.9200" / "Desired GPU memory utilization is (0.92, ...)");
the rehearsal's 0.22.1+ pods printed 'gpu_memory_utilization': 0.92 (0.19 pods 0.9), a flag nobody set, in the
line the runbook greps. The log's parser still reads the utilization the start used: the release's default.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fixtures.sim_world import l40s_pod_cluster
from vllm_remedy.sim.cluster import Cluster
from vllm_remedy.sim.store import ApiError
from vllm_remedy.vllm.startup_log import parse_startup_log

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with l40s_pod_cluster(2) as c:
        yield c


def _log(cluster: Cluster, name: str) -> str:
    try:
        return cluster.read_log("llm", name)
    except ApiError:  # no container yet
        return ""


def _args_line(cluster: Cluster, name: str, image: str, extra: list[str]) -> tuple[str, str]:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "llm"},
           "spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"},
                    "containers": [{"name": "vllm", "image": image, "command": ["vllm", "serve"],
                                    "args": [LLAMA, "--max-model-len", "16384", *extra],
                                    "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}
    cluster.store.create("pods", pod)
    assert cluster.wait_for(lambda: "GPU KV cache size" in _log(cluster, name), 8)
    log = _log(cluster, name)
    return next(x for x in log.splitlines() if "non-default args" in x), log


@pytest.mark.parametrize(("image", "default"), [("vllm/vllm-openai:v0.19.0", 0.9),
                                                ("vllm/vllm-openai:v0.22.1", 0.92),
                                                ("vllm/vllm-openai:v0.27.1", 0.92)])
def test_unset_utilization_is_not_a_non_default_arg(cluster: Cluster, image: str, default: float) -> None:
    line, log = _args_line(cluster, "p", image, [])
    assert "gpu_memory_utilization" not in line, line
    assert parse_startup_log(log).gpu_memory_utilization == default


def test_a_set_utilization_is_listed(cluster: Cluster) -> None:
    line, log = _args_line(cluster, "q", "vllm/vllm-openai:v0.22.1", ["--gpu-memory-utilization", "0.85"])
    assert "'gpu_memory_utilization': 0.85" in line, line
    assert parse_startup_log(log).gpu_memory_utilization == 0.85
