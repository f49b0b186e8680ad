"""The rehearsal cluster's vLLM pods reach each startup stage in cluster time, as real vLLM does: a node that lacks
the image pulls it first (ContainerCreating), then the log shows loading (∝ the weights), profiling, CUDA-graph
capture (none with --enforce-eager) and the server coming up — read with the same stage parser a wait uses."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

import pytest

from vllm_remedy.sim.clock import Clock
from vllm_remedy.sim.cluster import Cluster
from vllm_remedy.sim.controllers.images import image_names, pull_seconds
from vllm_remedy.sim.seed import make_node
from vllm_remedy.sim.vllm_pod import install, timeline
from vllm_remedy.sim.vllm_pod.launch import Launch, plan
from vllm_remedy.vllm.cmdline import find_server
from vllm_remedy.vllm.startup_log.stage import API, GRAPHS, LOADING, PROFILING, SERVING, STARTING, startup_stage

STARTED = datetime(2026, 1, 1, 9, 0, 0)


def launch(model: str, *args: str, image: str = "vllm/vllm-openai:v0.8.5") -> Launch:
    c = {"name": "vllm", "image": image, "args": ["--model", model, *args],
         "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    node = make_node({"name": "n", "gpu": {"product": "NVIDIA-L40S", "count": 1}}, "t")
    got = plan(find_server({"containers": [c]}), c, node)
    assert isinstance(got, Launch)
    return got


def stage_times(run: Launch) -> list[tuple[float, str]]:
    """(cluster second the log first shows it, stage) for one start, as a wait reading ``kubectl logs`` sees it."""
    lines = timeline.plan_start(run, STARTED).lines
    out: list[tuple[float, str]] = []
    for line in lines:
        shown = "".join(f"{x.text}\n" for x in lines if x.offset <= line.offset)
        stage = startup_stage(shown).stage
        if not out or out[-1][1] != stage:
            out.append((line.offset, stage))
    return out


def test_a_start_passes_each_stage_at_its_time_and_loading_grows_with_the_weights() -> None:
    llama = launch("meta-llama/Llama-3.1-8B-Instruct", "--max-model-len", "16384")
    loaded = timeline.load_seconds(llama.estimate.weights_gib)
    kv = loaded + timeline.PROFILE_SECONDS
    captured = kv + timeline.GRAPH_SECONDS
    got = stage_times(llama)
    assert [stage for _, stage in got] == [STARTING, LOADING, PROFILING, GRAPHS, API, SERVING]
    assert [at for at, _ in got] == pytest.approx(
        [0.0, timeline.BOOT_SECONDS, loaded, kv, captured, captured + timeline.UP_SECONDS], abs=2 * timeline.LINE_GAP)
    small = stage_times(launch("Qwen/Qwen2.5-0.5B-Instruct", "--max-model-len", "8192"))
    load_small = small[2][0] - small[1][0]
    load_llama = loaded - timeline.BOOT_SECONDS
    assert load_small < load_llama / 2  # a 1 GiB model loads in a fraction of a 15 GiB one's time


def test_enforce_eager_goes_from_profiling_to_serving_without_a_capture() -> None:
    eager = stage_times(launch("meta-llama/Llama-3.1-8B-Instruct", "--max-model-len", "16384", "--enforce-eager"))
    assert [stage for _, stage in eager] == [STARTING, LOADING, PROFILING, SERVING]


def test_v0_announces_its_capture_when_it_starts() -> None:
    run = launch("meta-llama/Llama-3.1-8B-Instruct", "--max-model-len", "16384", image="vllm/vllm-openai:v0.6.6")
    times = dict((stage, at) for at, stage in stage_times(run))
    assert times[API] - times[GRAPHS] == pytest.approx(timeline.GRAPH_SECONDS, abs=0.5)
    shown = [line.text for line in timeline.plan_start(run, STARTED).lines]
    capture = next(i for i, text in enumerate(shown) if "Capturing cudagraphs for decoding" in text)
    assert "Capturing CUDA graph shapes: 100%" in shown[capture + 1]  # the bar closes as the capture ends


@pytest.fixture
def slow_cluster() -> Iterator[Cluster]:
    c = Cluster("t", clock=Clock(speed=120))
    install(c)
    c.store.create("nodes", make_node({"name": "fresh", "gpu": {"product": "NVIDIA-L40S", "count": 2}}, "t"))
    c.start()
    yield c
    c.stop()


def pod(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "llm"},
            "spec": {"containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.8.5", "command": ["vllm", "serve"],
                                     "args": ["meta-llama/Llama-3.1-8B-Instruct", "--max-model-len", "16384"],
                                     "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}


def events(c: Cluster, name: str) -> list[tuple[str, str]]:
    found = c.store.list("events", "llm")[0]
    return [(e["reason"], e["message"]) for e in found if e["involvedObject"]["name"] == name]


def test_a_node_without_the_image_pulls_it_first_and_keeps_it(slow_cluster: Cluster) -> None:
    c = slow_cluster
    c.store.create("pods", pod("first"))
    assert c.wait_for(lambda: ("Pulling", 'Pulling image "vllm/vllm-openai:v0.8.5"') in events(c, "first"), 5)
    status = c.store.get("pods", "llm", "first")["status"]
    assert status["phase"] == "Pending"
    assert status["containerStatuses"][0]["state"] == {"waiting": {"reason": "ContainerCreating"}}
    assert {"type": "PodReadyToStartContainers", "status": "True"}.items() <= next(
        x for x in status["conditions"] if x["type"] == "PodReadyToStartContainers").items()
    seconds = pull_seconds("vllm/vllm-openai:v0.8.5")
    assert c.wait_for(lambda: "running" in c.store.get("pods", "llm", "first")["status"]["containerStatuses"][0][
        "state"], seconds / 120 + 5)
    assert ("Pulled", 'Successfully pulled image "vllm/vllm-openai:v0.8.5" in 1m52s (1m52s including waiting). '
            "Image size: 9000000000 bytes.") in events(c, "first")
    listed = c.store.get("nodes", "", "fresh")["status"]["images"]
    assert listed == [{"names": image_names("vllm/vllm-openai:v0.8.5"), "sizeBytes": 9_000_000_000}]
    assert listed[0]["names"][1] == "docker.io/vllm/vllm-openai:v0.8.5"

    c.store.create("pods", pod("second"))  # the node has it now
    assert c.wait_for(lambda: ("Pulled", 'Container image "vllm/vllm-openai:v0.8.5" already present on machine')
                      in events(c, "second"), 5)
    assert not any(reason == "Pulling" for reason, _ in events(c, "second"))
