"""The lines a rehearsal pod's Ray executor logs while it waits for a placement group name the line of ray_utils.py
that logs them in the pod's release (``sim.vllm_pod.ray_log_sources``), not one number for every release: TP 2 on a
one-GPU pod up to 0.11.0 (executor/ray_utils.py@0.7.3 l.327/221, @0.11.0 l.352/240), and the leader of a Ray-backed
LeaderWorkerSet group short of GPUs from 0.12.0 (v1/executor/ray_utils.py@0.20.0 l.556/627/464), through the served
rehearsal cluster and the official ``kubernetes`` client."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fixtures.lws_world import vllm_lws
from fixtures.served_pods import Apis, ended, served_lws

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
REQUIRED, WAITING = "The number of required GPUs exceeds", "Waiting for creating a placement group of specs for 10 "
TP = "Tensor parallel size (4) exceeds available GPUs (1)."


@pytest.fixture(scope="module")
def apis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Apis]:
    yield from served_lws(tmp_path_factory.mktemp("kube"), 4)  # one-GPU nodes: two pods, a group of two


def _pod(apis: Apis, name: str, release: str) -> str:
    core, _ = apis
    core.create_namespaced_pod("llm", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"containers": [{"name": "vllm", "image": f"vllm/vllm-openai:v{release}", "command": ["vllm", "serve"],
                                 "args": [LLAMA, "--max-model-len", "8192", "--tensor-parallel-size", "2"],
                                 "readinessProbe": {"httpGet": {"path": "/health", "port": 8000}},
                                 "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}})
    log, code = ended(core, name, "vllm")
    assert code == 1, log[-2000:]
    return log


@pytest.mark.parametrize("release, required, waiting", [("0.7.3", 327, 221), ("0.11.0", 352, 240)])
def test_a_single_pod_waits_in_its_releases_lines(apis, release: str, required: int, waiting: int) -> None:
    """Before: ray_utils.py:240 for both lines of every release."""
    log = _pod(apis, f"tp2-{release.replace('.', '-')}", release)
    assert f"ray_utils.py:{required}] {REQUIRED}" in log, log[-3000:]
    assert f"ray_utils.py:{waiting}] {WAITING}" in log, log[-3000:]


def test_a_ray_backed_group_waits_in_its_releases_lines(apis) -> None:
    """0.20.0's v1 executor warns of the TP size first. Before: ray_utils.py:240 for all three lines."""
    core, custom = apis
    lws = vllm_lws("tp4-ray", [LLAMA, "--max-model-len", "8192", "--tensor-parallel-size", "4",
                               "--distributed-executor-backend", "ray"], size=2)
    for role in ("leaderTemplate", "workerTemplate"):
        for c in lws["spec"]["leaderWorkerTemplate"][role]["spec"]["containers"]:
            c["image"] = "vllm/vllm-openai:v0.20.0"
    custom.create_namespaced_custom_object("leaderworkerset.x-k8s.io", "v1", "llm", "leaderworkersets", lws)
    log, code = ended(core, "tp4-ray-0", "vllm-leader")
    assert code == 1, log[-2000:]
    for line, text in ((556, TP), (627, REQUIRED), (464, WAITING)):
        assert f"[ray_utils.py:{line}] {text}" in log, (line, log[-3000:])
