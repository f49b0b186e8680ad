"""The packaged seed runbook-statefulset serves the runbook's vLLM server as a StatefulSet, and the runbook's own
bad rollout on it (--max-model-len dropped, moved to the 24 GB L4 pool) is restored by deploys/restore.py in one
run through the real pyinfra CLI: the vLLM simulator crash-loops it on an L4 with vLLM's own error."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path

import pytest

from fixtures.pyinfra_run import Rehearsal, host_lines, start_rehearsal
from fixtures.sts_world import RESTORE, STS_HOST, STS_PATH, crash_looping_on, inventory, sts
from vllm_remedy.kube.client import JSON_PATCH
from vllm_remedy.kube.errors import NotFoundError
from vllm_remedy.kube.patch import json_patch
from vllm_remedy.kube.sts_wait import wait_for_sts_rollout

L4 = {"cloud.google.com/gke-accelerator": "nvidia-l4"}


@pytest.fixture
def world(tmp_path: Path) -> Iterator[Rehearsal]:
    sim = start_rehearsal(tmp_path, seed="runbook-statefulset")
    yield sim
    sim.stop()


def test_the_runbooks_bad_rollout_on_the_seeded_set_is_restored_in_one_run(world: Rehearsal, tmp_path: Path) -> None:
    client = world.client()
    with pytest.raises(NotFoundError):
        client.get_deployment("llm", "llama-8b")  # the set has the L40S cards
    # its pods pull the image and load the weights from scratch (no history ran them on these nodes)
    assert wait_for_sts_rollout(client, "llm", "llama-sts", timeout=7200, clock=world.cluster.clock, interval=5).ok
    good = sts(world)
    bad = copy.deepcopy(good)
    spec = bad["spec"]["template"]["spec"]
    spec["containers"][0]["args"] = ["meta-llama/Llama-3.1-8B-Instruct", "--gpu-memory-utilization", "0.90",
                                     "--max-num-seqs", "64"]
    spec["nodeSelector"] = dict(L4)
    spec["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    client.request("PATCH", STS_PATH, body=json_patch(good, bad), content_type=JSON_PATCH)
    crash_looping_on(world, "llama-sts-1")
    got = world.pyinfra(inventory(tmp_path), RESTORE, "-y", timeout=300)
    assert got.returncode == 0, got.stderr
    lines = host_lines(got.stderr, STS_HOST)
    assert any(line.startswith("roll back statefulset llm/llama-sts from revision 2 to revision 1 (") for line in lines)
    assert any(line.startswith("skipped revision 2 ") and "dying now (1 pod(s) max_len_exceeds_kv)" in line
               for line in lines), lines
    after = sts(world)
    assert after["spec"]["template"]["spec"]["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-L40S"}
    assert after["status"]["readyReplicas"] == 2
