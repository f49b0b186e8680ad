"""The leader of a multi-node LeaderWorkerSet group counts GPUs as its release does, through the served rehearsal
cluster and the official ``kubernetes`` client. From 0.12.0 ParallelConfig picks the executor backend itself when none
is named and ``--nnodes`` is 1, and first compares TP × PP with the devices of the leader's own node
(config/parallel.py@0.13.0 l.561: ``cuda_device_count_stateless() < self.world_size``): a group of two one-GPU pods
running TP 2 without ``--distributed-executor-backend ray`` ends with "World size (2) is larger than the number of
available GPUs (1) in this node.", whatever the Ray cluster holds. The pod counted every pod of the group and started.
Named, the Ray backend spans the group's GPUs and the leader serves; with more workers than the group has GPUs, it
warns, waits 1800 s for a placement group and gives up in v1/executor/ray_utils.py's words (@0.13.0 l.268), where
the pod printed a line of its own."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fixtures.lws_world import vllm_lws
from fixtures.served_pods import Apis, ended, served_lws

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
TP2 = [LLAMA, "--max-model-len", "8192", "--tensor-parallel-size", "2"]


@pytest.fixture(scope="module")
def apis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Apis]:
    yield from served_lws(tmp_path_factory.mktemp("kube"), 6)  # one-GPU nodes: groups of two pods


def _leader(apis: Apis, name: str, args: list[str]) -> tuple[str, int | None]:
    """Create the LWS (v0.13.0); the leader's log and exit code once it ends, or (its log, None) once it serves."""
    core, custom = apis
    lws = vllm_lws(name, args, size=2)
    for role in ("leaderTemplate", "workerTemplate"):
        for c in lws["spec"]["leaderWorkerTemplate"][role]["spec"]["containers"]:
            c["image"] = "vllm/vllm-openai:v0.13.0"
    custom.create_namespaced_custom_object("leaderworkerset.x-k8s.io", "v1", "llm", "leaderworkersets", lws)
    return ended(core, f"{name}-0", "vllm-leader")


def test_without_a_backend_the_leader_counts_its_own_node(apis):
    log, code = _leader(apis, "tp2-default", TP2)
    assert code == 1, log[-2000:]
    assert "Value error, World size (2) is larger than the number of available GPUs (1) in this node. If this is " \
           "intentional and you are using:" in log, log[-2000:]
    assert "Ray cluster" not in log


def test_with_the_ray_backend_the_group_serves(apis):
    log, code = _leader(apis, "tp2-ray", [*TP2, "--distributed-executor-backend", "ray"])
    assert code is None and "Application startup complete" in log, log[-2000:]


def test_with_the_ray_backend_a_group_short_of_gpus_waits_for_its_placement_group(apis):
    log, code = _leader(apis, "tp4-ray", [LLAMA, "--max-model-len", "8192", "--tensor-parallel-size", "4",
                                          "--distributed-executor-backend", "ray"])
    assert code == 1, log[-2000:]
    assert "Tensor parallel size (4) exceeds available GPUs (1). This may result in Ray placement group allocation " \
           "failures." in log
    assert "Waiting for creating a placement group of specs for 2550 seconds. specs=[{'GPU': 1.0, 'node:" in log
    last = [line.split(") ", 1)[-1] for line in log.splitlines()[-3:]]  # without the process prefix
    assert last[0].startswith("ValueError: Cannot provide a placement group requiring 4 GPUs (placement_group_specs="
                              "[{'GPU': 1.0, 'node:") and last[0].endswith("{'GPU': 1.0}]) within 1800 seconds."), last
    assert last[1:] == ["Tensor parallel size may exceed available GPUs in your cluster. Check resources with "
                        "`ray status` and `ray list nodes`.", "If running on K8s with limited GPUs, consider "
                        "reducing --tensor-parallel-size to match available GPU resources."], last
    assert '/vllm/v1/executor/ray_utils.py", line 268, in _wait_until_pg_ready' in log, log[-2000:]
    assert "Ray cluster of" not in log
