"""The rehearsal cluster's DCGM exporter: one Ready pod per GPU node whose numbers are the cluster's GPU state."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from vllm_remedy.kube.dcgm import framebuffers
from vllm_remedy.sim.cluster import Cluster
from vllm_remedy.sim.dcgm_exporter import NAMESPACE
from vllm_remedy.sim.vllm_pod import keys
from vllm_remedy.sim.vllm_pod.launch import plan
from vllm_remedy.sim.vllm_pod.runtime import own_gib
from vllm_remedy.vllm.cmdline import find_server


@pytest.fixture
def runbook() -> Iterator[Cluster]:
    cluster = Cluster("rehearsal", speed=600)
    cluster.start()
    cluster.apply_seed("runbook", wait=True, timeout=60)
    yield cluster
    cluster.stop()


def exporters(cluster: Cluster) -> dict[str, dict]:
    return {p["spec"]["nodeName"]: p for p in cluster.store.list("pods", NAMESPACE)[0]}


def scrape(cluster: Cluster, node: str) -> str:
    pod = exporters(cluster)[node]["metadata"]["name"]
    status, kind, body = cluster.proxy(NAMESPACE, pod, 9400, "/metrics")
    assert status == 200 and kind.startswith("text/plain; version=0.0.4"), body
    return body.decode()


def wait(predicate, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_one_ready_exporter_per_gpu_node(runbook: Cluster) -> None:
    gpu_nodes = {n["metadata"]["name"] for n in runbook.store.list("nodes")[0]
                 if n["status"]["capacity"].get("nvidia.com/gpu")}
    wait(lambda: all(any(c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions", []))
                     for p in exporters(runbook).values()))
    assert set(exporters(runbook)) == gpu_nodes and len(gpu_nodes) == 6


def test_a_serving_vllm_pod_shows_its_own_memory_on_its_gpu(runbook: Cluster) -> None:
    vllm = [p for p in runbook.store.list("pods", "llm")[0]]
    pod = vllm[0]
    node = runbook.store.get("nodes", "", pod["spec"]["nodeName"])
    container = pod["spec"]["containers"][0]
    launch = plan(find_server({"containers": [container]}), container, node)
    (gpu,) = framebuffers(scrape(runbook, node["metadata"]["name"]))
    assert gpu.pods == (("llm", pod["metadata"]["name"], "vllm"),)
    assert gpu.used_mib == round(own_gib(launch) * 1024) and gpu.model == "NVIDIA L40S"  # type: ignore[arg-type]
    assert gpu.total_mib == 46068 and gpu.reserved_mib == 46068 - round(44.42 * 1024)


def test_foreign_memory_adds_to_the_gpu_and_an_idle_gpu_maps_to_no_pod(runbook: Cluster) -> None:
    (idle,) = framebuffers(scrape(runbook, "gke-l4-pool-1"))
    assert (idle.used_mib, idle.pods, idle.total_mib) == (0, (), 23034)
    runbook.store.mutate("nodes", "", "gke-l4-pool-1",
                         lambda n: n["metadata"].setdefault("annotations", {}).update({keys.GPU_USED_GIB: "5.5"}))
    (held,) = framebuffers(scrape(runbook, "gke-l4-pool-1"))
    assert held.used_mib == 5632 and held.free_mib == 23034 - 547 - 5632
    runbook.set_node_gpu_used("gke-l4-pool-2", 2048)  # the cluster-level knob, for nodes without the annotation
    assert framebuffers(scrape(runbook, "gke-l4-pool-2"))[0].used_mib == 2048
