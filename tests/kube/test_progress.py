"""kube.progress over the fake API server: the newest new pod's stage from its status, then from its log's tail.

The logs are the real ones in tests/data/logs (SOURCES.md), served as ``kubectl logs`` would serve them.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from fixtures.kube_fakeapi import FakeApi, started
from fixtures.kube_objects import MAX_LEN_LOG, crashloop_pod
from vllm_remedy.kube.progress import LIMIT_BYTES, TAIL_LINES, Progress, ProgressReader

LOGS = Path(__file__).resolve().parents[1] / "data" / "logs"
V019 = (LOGS / "v0.19.0_planner_meta_llama_llama_3_1_8b_h100_tp1pp1dp1_16384.log").read_text()
DEPLOYMENT = {"metadata": {"name": "llama-8b", "namespace": "llm"}, "spec": {"replicas": 2}}


@pytest.fixture
def api(tmp_path: Path):
    fake = started(tmp_path, sleep=lambda s: None)
    yield fake
    fake.stop()


def pod(name: str, created: str, *, state: dict[str, Any] | None = None, ready: bool = False, restarts: int = 0,
        last: dict[str, Any] | None = None, node: str | None = "gpu-l40s-1",
        conditions: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A pod of the new ReplicaSet with one vLLM container in the given state."""
    status = {"name": "vllm", "ready": ready, "restartCount": restarts, "state": state or {"running": {}},
              "lastState": {"terminated": last} if last else {}, "containerID": f"containerd://{name}-{restarts}"}
    conds = conditions if conditions is not None else [
        {"type": "PodScheduled", "status": "True"}, {"type": "PodReadyToStartContainers", "status": "True"},
        {"type": "Ready", "status": "True" if ready else "False"}]
    spec: dict[str, Any] = {"containers": [{"name": "sidecar", "image": "envoy:1.31", "args": ["envoy"]},
                                           {"name": "vllm", "image": "vllm/vllm-openai:v0.8.5",
                                            "args": ["meta-llama/Llama-3.1-8B-Instruct"],
                                            "command": ["vllm", "serve"]}]}
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": name, "namespace": "llm", "creationTimestamp": created},
            "spec": spec, "status": {"phase": "Running", "conditions": conds,
                                     "containerStatuses": [status] if state is not False else []}}


def read(api: FakeApi, pods: list[dict[str, Any]], reader: ProgressReader | None = None) -> Progress:
    for p in pods:
        api.add("pods", copy.deepcopy(p))
    return (reader or ProgressReader(api.client, "llm")).read(DEPLOYMENT, pods)


def test_the_newest_pods_log_stage_with_ready_of_desired_and_a_cheap_read(api: FakeApi) -> None:
    older = pod("llama-8b-6b765dc795-aaaaa", "2025-06-02T09:30:00Z", ready=True)
    newer = pod("llama-8b-6b765dc795-bbbbb", "2025-06-02T09:31:00Z")
    api.logs[("llama-8b-6b765dc795-bbbbb", "vllm", False)] = V019[:V019.index("Graph capturing finished")]
    got = read(api, [newer, older])
    assert got == Progress(1, 2, "llama-8b-6b765dc795-bbbbb",
                           "capturing CUDA graphs (KV cache 476,016 tokens, 29.05x concurrency)")
    assert str(got) == ("1/2 Ready; newest pod llama-8b-6b765dc795-bbbbb: capturing CUDA graphs (KV cache 476,016 "
                        "tokens, 29.05x concurrency)")
    logs = [s for s in api.seen if s.path.endswith("/log")]
    assert [(s.path, s.query) for s in logs] == [  # only the newest pod, the vLLM container, a bounded tail
        ("/api/v1/namespaces/llm/pods/llama-8b-6b765dc795-bbbbb/log",
         {"container": "vllm", "tailLines": str(TAIL_LINES), "limitBytes": str(LIMIT_BYTES)})]


def test_before_vllm_runs_the_status_says_where_the_pod_is(api: FakeApi) -> None:
    message = ("0/6 nodes are available: 3 Insufficient nvidia.com/gpu, 3 node(s) didn't match Pod's node "
               "affinity/selector.")
    unschedulable = pod("p-1", "t1", state=False, node=None, conditions=[
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}])
    assert read(api, [unschedulable]).stage == f"Pending: unschedulable: {message}"
    assert read(api, [pod("p-2", "t2", state=False, node=None, conditions=[])]).stage == \
        "Pending: waiting for the scheduler"
    creating = {"waiting": {"reason": "ContainerCreating"}}
    sandbox = pod("p-3", "t3", state=creating, conditions=[{"type": "PodReadyToStartContainers", "status": "False"}])
    assert read(api, [sandbox]).stage == "scheduled on gpu-l40s-1"
    assert read(api, [pod("p-4", "t4", state=creating)]).stage == "pulling image vllm/vllm-openai:v0.8.5"
    backoff = {"waiting": {"reason": "ImagePullBackOff",
                           "message": 'Back-off pulling image "vllm/vllm-openai:v0.8.5"'}}
    assert read(api, [pod("p-5", "t5", state=backoff)]).stage == (
        'pulling image failed: ImagePullBackOff: Back-off pulling image "vllm/vllm-openai:v0.8.5"')
    config = {"waiting": {"reason": "CreateContainerConfigError", "message": 'secret "hf-token" not found'}}
    assert read(api, [pod("p-6", "t6", state=config)]).stage == (
        'waiting: CreateContainerConfigError: secret "hf-token" not found')
    bound = pod("p-7", "t7", state=False, conditions=[{"type": "PodScheduled", "status": "True"}])
    assert read(api, [bound]).stage == "scheduled on gpu-l40s-1"  # the kubelet has not reported it yet
    assert [s for s in api.seen if s.path.endswith("/log")] == []  # no log read before vLLM runs


def test_ready_is_serving_and_no_new_pod_says_so(api: FakeApi) -> None:
    probed = pod("p-1", "t1", ready=True)  # Ready by its probe (without one: tests/kube/test_serving_gate.py)
    probed["spec"]["containers"][1]["readinessProbe"] = {"httpGet": {"path": "/health", "port": 8000}}
    assert read(api, [probed]).stage == "serving (Ready)"
    gone = pod("p-2", "t2")
    gone["metadata"]["deletionTimestamp"] = "2025-06-02T09:40:00Z"
    assert str(read(api, [gone])) == "0/2 Ready; no pod of the new ReplicaSet yet"


def test_a_crash_is_named_by_its_log_once_per_dead_instance(api: FakeApi) -> None:
    looping = crashloop_pod("p-1")  # CrashLoopBackOff after 5 restarts, the last one exit 1
    api.logs[("p-1", "vllm", True)] = MAX_LEN_LOG
    reader = ProgressReader(api.client, "llm")
    assert read(api, [looping], reader).stage == "crashed (max_len_exceeds_kv); CrashLoopBackOff before restart 6"
    assert read(api, [looping], reader).stage.startswith("crashed (max_len_exceeds_kv)")
    assert len([s for s in api.seen if s.path.endswith("/log")]) == 1  # classified once

    restarted = pod("p-1", "t1", restarts=5, last={"exitCode": 1, "reason": "Error",
                                                   "containerID": "containerd://0f3c"})
    api.logs[("p-1", "vllm", False)] = V019[:V019.index("Model loading took")]
    assert read(api, [restarted], reader).stage == "loading weights; restart 5 after crashed (max_len_exceeds_kv)"
    killed = pod("p-2", "t2", state={"terminated": {"exitCode": 137, "reason": "OOMKilled",
                                                    "containerID": "containerd://dead"}})
    assert read(api, [killed]).stage == "crashed (host_oom_killed)"  # the status knows; no log needed


def test_a_failed_log_read_keeps_the_stage_already_known(api: FakeApi) -> None:
    running = pod("p-1", "t1")
    api.logs[("p-1", "vllm", False)] = V019[:V019.index("Initial profiling/warmup run")]
    reader = ProgressReader(api.client, "llm")
    assert read(api, [running], reader).stage == "profiling (torch.compile)"
    api.faults = [503]  # one attempt only: a slow or failing log never holds up the wait
    assert read(api, [running], reader).stage == "profiling (torch.compile)"
    del api.logs[("p-1", "vllm", False)]  # 400 from the server
    assert read(api, [running], reader).stage == "profiling (torch.compile)"
    assert read(api, [pod("p-9", "t9")]).stage == "starting"  # nothing known, nothing read
