"""Kubelet: crash loops with kubelet's back-off, lastState, readiness, logs (--previous) and proxy."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from vllm_remedy.kube.annotations import parse_rfc3339
from vllm_remedy.sim.clock import Clock
from vllm_remedy.sim.cluster import Cluster
from vllm_remedy.sim.controllers.kubelet import go_duration
from vllm_remedy.sim.controllers.util import condition
from vllm_remedy.sim.runtime import ContainerContext, ContainerRun, Exit, LogLine
from vllm_remedy.sim.seed import make_node
from vllm_remedy.sim.store import ApiError


def new_cluster(runtime=None) -> Cluster:
    c = Cluster("test", clock=Clock(speed=600), runtime=runtime)
    c.store.create("nodes", make_node({"name": "l40s-1", "gpu": {"product": "NVIDIA-L40S", "count": 4}}, "t"))
    c.start()
    return c


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    c = new_cluster()
    yield c
    c.stop()


def pod(name: str = "p", annotations: dict | None = None, probe: bool = True, containers: int = 1) -> dict:
    specs = []
    for i in range(containers):
        spec = {"name": "vllm" if i == 0 else f"side{i}", "image": "vllm/vllm-openai:v0.8.5",
                "ports": [{"containerPort": 8000}]}
        if probe:
            spec["readinessProbe"] = {"httpGet": {"path": "/health", "port": 8000}}
        specs.append(spec)
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "llm", "annotations": annotations or {}},
            "spec": {"containers": specs}}


def status(c: Cluster, name: str = "p") -> dict:
    return c.store.get("pods", "llm", name).get("status") or {}


def vllm_status(c: Cluster, name: str = "p") -> dict:
    return next((s for s in status(c, name).get("containerStatuses") or [] if s.get("name") == "vllm"), {})


CRASH = {"sim.vllm-remedy.io/exit-code": "1", "sim.vllm-remedy.io/exit-after": "2",
         "sim.vllm-remedy.io/log": "Loading model weights took 14.99 GiB\ntorch.OutOfMemoryError: CUDA out of memory."}


def test_crash_loop_backs_off_like_kubelet(cluster):
    messages: list[str] = []

    def listener(event) -> None:
        if event.resource == "pods":
            for cs in event.object.get("status", {}).get("containerStatuses") or []:
                msg = cs.get("state", {}).get("waiting", {}).get("message", "")
                if msg and (not messages or messages[-1] != msg):
                    messages.append(msg)

    cluster.store.subscribe(listener)
    made = cluster.store.create("pods", pod(annotations=CRASH))
    assert cluster.wait_for(lambda: vllm_status(cluster).get("restartCount", 0) >= 5
                            and "waiting" in vllm_status(cluster)["state"], 5)
    suffix = f"restarting failed container=vllm pod=p_llm({made['metadata']['uid']})"
    assert messages[:4] == [f"back-off {t} {suffix}" for t in ("10s", "20s", "40s", "1m20s")]
    cs = vllm_status(cluster)
    assert cs["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    assert cs["state"]["waiting"]["message"] == f"back-off 2m40s {suffix}"
    assert (cs["ready"], cs["started"], cs["restartCount"]) == (False, False, 5)
    last = cs["lastState"]["terminated"]
    assert (last["exitCode"], last["reason"]) == (1, "Error")
    assert last["containerID"].startswith("containerd://") and last["finishedAt"] >= last["startedAt"]
    st = status(cluster)
    assert st["phase"] == "Running"
    ready = condition(st, "Ready")
    assert (ready["status"], ready["reason"], ready["message"]) == (
        "False", "ContainersNotReady", "containers with unready status: [vllm]")
    events = [e for e in cluster.store.list("events", "llm")[0] if e["reason"] == "BackOff"]
    assert len(events) == 1 and events[0]["type"] == "Warning" and events[0]["count"] >= 4
    assert events[0]["message"] == f"Back-off restarting failed container vllm in pod p_llm({made['metadata']['uid']})"
    assert events[0]["involvedObject"]["fieldPath"] == "spec.containers{vllm}"


def test_go_duration_matches_kubelet_messages():
    assert [go_duration(s) for s in (10, 20, 40, 80, 160, 300)] == ["10s", "20s", "40s", "1m20s", "2m40s", "5m0s"]


def test_exit_137_is_oomkilled(cluster):
    cluster.store.create("pods", pod(annotations={"sim.vllm-remedy.io/exit-code": "137"}))
    assert cluster.wait_for(lambda: vllm_status(cluster).get("lastState", {}).get("terminated") is not None, 3)
    last = vllm_status(cluster)["lastState"]["terminated"]
    assert (last["exitCode"], last["reason"]) == (137, "OOMKilled")


def test_previous_log_is_the_crashed_instance_and_400_without_one(cluster):
    cluster.store.create("pods", pod(annotations=CRASH))
    with pytest.raises(ApiError) as err:
        cluster.read_log("llm", "p", "vllm", previous=True)
    assert (err.value.code, err.value.reason, err.value.message) == (
        400, "BadRequest", 'previous terminated container "vllm" in pod "p" not found')
    assert cluster.wait_for(lambda: vllm_status(cluster).get("restartCount", 0) >= 1, 3)
    assert cluster.read_log("llm", "p", "vllm", previous=True) == (
        "starting container vllm (image vllm/vllm-openai:v0.8.5)\n"
        "Loading model weights took 14.99 GiB\n"
        "torch.OutOfMemoryError: CUDA out of memory.\n"
        "exiting with code 1\n")
    # In CrashLoopBackOff the current log is the last terminated instance's, as kubelet serves it.
    assert cluster.wait_for(lambda: "waiting" in vllm_status(cluster)["state"], 3)
    assert cluster.read_log("llm", "p", None, previous=False) == cluster.read_log("llm", "p", "vllm", previous=True)


def test_log_errors_match_the_apiserver(cluster):
    cluster.store.create("pods", pod(containers=2))
    with pytest.raises(ApiError) as err:
        cluster.read_log("llm", "p", None)
    assert err.value.message == "a container name must be specified for pod p, choose one of: [vllm side1]"
    with pytest.raises(ApiError) as err:
        cluster.read_log("llm", "p", "nope")
    assert (err.value.code, err.value.message) == (400, "container nope is not valid for pod p")
    with pytest.raises(ApiError) as err:
        cluster.read_log("llm", "missing", "vllm")
    assert err.value.code == 404
    assert cluster.wait_for(lambda: vllm_status(cluster).get("ready") is True, 3)
    assert cluster.read_log("llm", "p", "vllm") == "starting container vllm (image vllm/vllm-openai:v0.8.5)\nready\n"


def test_readiness_follows_the_probe_and_status_fields_are_filled(cluster):
    cluster.store.create("pods", pod(name="probed", annotations={"sim.vllm-remedy.io/ready-after": "600"}))
    cluster.store.create("pods", pod(name="plain", probe=False, annotations={"sim.vllm-remedy.io/ready-after": "600"}))
    assert cluster.wait_for(lambda: vllm_status(cluster, "plain").get("ready") is True, 3)
    assert cluster.wait_for(lambda: vllm_status(cluster, "probed").get("ready") is True, 10)
    st = status(cluster, "probed")
    # the probe held Ready back for ready-after: compared on the cluster's own stamps, not on when the test looked
    started = parse_rfc3339(vllm_status(cluster, "probed")["state"]["running"]["startedAt"])
    ready_at = parse_rfc3339(next(c for c in st["conditions"] if c["type"] == "Ready")["lastTransitionTime"])
    assert ready_at - started >= 599, (started, ready_at)
    assert st["phase"] == "Running"
    assert st["hostIP"].startswith("10.0.") and st["podIP"].startswith("10.244.") and st["startTime"]
    assert [c["type"] for c in st["conditions"]] == [
        "PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"]
    assert all(c["status"] == "True" for c in st["conditions"])
    assert vllm_status(cluster, "probed")["started"] is True
    assert vllm_status(cluster, "probed")["imageID"].startswith("docker.io/vllm/vllm-openai@sha256:")


def test_proxy_serves_running_container_and_refuses_otherwise(cluster):
    cluster.store.create("pods", pod())
    code, _, body = cluster.proxy("llm", "p", 8000, "/health")
    assert code == 503 and b"connection refused" in body
    assert cluster.wait_for(lambda: vllm_status(cluster).get("ready") is True, 3)
    assert cluster.proxy("llm", "p", 8000, "/health")[0] == 200
    code, ctype, body = cluster.proxy("llm", "p", "8000", "metrics")
    assert (code, ctype.split(";")[0]) == (200, "text/plain") and b"up 1" in body


class OomUnderLoad:
    """A runtime plug-in (the seam the vLLM simulator uses): ready at once, CUDA OOM above 10 requests."""

    def __init__(self) -> None:
        self.contexts: list[ContainerContext] = []

    def start(self, ctx: ContainerContext) -> ContainerRun:
        self.contexts.append(ctx)

        def check(load: float) -> Exit | None:
            if load > 10:
                return Exit(after=0, code=1, log=("torch.OutOfMemoryError: CUDA out of memory.",))
            return None

        return ContainerRun(log=[LogLine(0, "Application startup complete.")], ready_after=5, load_check=check)


def test_runtime_plugin_sees_node_and_load_and_crashes_under_load():
    runtime = OomUnderLoad()
    c = new_cluster(runtime)
    try:
        c.set_node_gpu_used("l40s-1", 2048)
        c.store.create("pods", pod())
        assert c.wait_for(lambda: vllm_status(c).get("ready") is True, 3)
        ctx = runtime.contexts[0]
        assert ctx.node["metadata"]["name"] == "l40s-1" and ctx.gpu_memory_used_by_others_mib == 2048
        assert ctx.container["name"] == "vllm" and ctx.restart_count == 0
        c.set_load("llm", "", 50)  # a bare pod belongs to no deployment: key ""
        assert c.wait_for(lambda: vllm_status(c).get("restartCount") == 1, 3)
        assert c.read_log("llm", "p", "vllm", previous=True) == (
            "Application startup complete.\ntorch.OutOfMemoryError: CUDA out of memory.\n")
        assert runtime.contexts[-1].restart_count == 1
    finally:
        c.stop()


def test_logs_survive_snapshot_and_restore():
    c = new_cluster()
    c.store.create("pods", pod(annotations=CRASH))
    assert c.wait_for(lambda: vllm_status(c).get("restartCount", 0) >= 1, 3)
    previous = c.read_log("llm", "p", "vllm", previous=True)
    snap = c.snapshot()
    c.stop()
    again = Cluster("test", clock=Clock(speed=600))
    again.restore(snap)
    again.start()
    try:
        assert again.wait_for(lambda: vllm_status(again).get("restartCount", 0) >= 1, 3)
        assert again.read_log("llm", "p", "vllm", previous=True) == previous
    finally:
        again.stop()


def test_liveness_probe_kills_a_slow_model_load_and_a_startup_probe_prevents_it(cluster):
    slow = {"sim.vllm-remedy.io/ready-after": "240"}  # a 4-minute model load
    live = {"httpGet": {"path": "/health", "port": 8000}, "periodSeconds": 10, "failureThreshold": 3}
    killed = pod(name="killed", annotations=slow)
    killed["spec"]["containers"][0]["livenessProbe"] = live
    guarded = pod(name="guarded", annotations=slow)
    guarded["spec"]["containers"][0].update(
        livenessProbe=live, startupProbe={**live, "failureThreshold": 30})  # 300 s budget
    cluster.store.create("pods", killed)
    cluster.store.create("pods", guarded)
    assert cluster.wait_for(lambda: vllm_status(cluster, "killed").get("restartCount", 0) >= 1, 3)
    last = vllm_status(cluster, "killed")["lastState"]["terminated"]
    assert (last["exitCode"], last["reason"]) == (137, "Error")
    ip = status(cluster, "killed")["podIP"]
    events = {(e["reason"], e["message"]) for e in cluster.store.list("events", "llm")[0]
              if e["involvedObject"]["name"] == "killed"}
    assert ("Unhealthy", f'Liveness probe failed: Get "http://{ip}:8000/health": dial tcp {ip}:8000: '
                         "connect: connection refused") in events
    assert ("Killing", "Container vllm failed liveness probe, will be restarted") in events
    assert cluster.wait_for(lambda: vllm_status(cluster, "guarded").get("ready") is True, 3)
    assert vllm_status(cluster, "guarded")["restartCount"] == 0
