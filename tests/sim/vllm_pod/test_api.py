"""The runbook's world with simulated vLLM pods, through the HTTP API and real kubectl: the seed's healthy
revision serves, a bad rollout onto L4 crash-loops, and step 2's ``logs --previous | grep`` shows why."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from fixtures.sim_world import Sim, call
from vllm_remedy.sim import kubeconfig
from vllm_remedy.sim.clock import Clock
from vllm_remedy.sim.cluster import Cluster
from vllm_remedy.sim.server import SimServer
from vllm_remedy.sim.vllm_pod import install
from vllm_remedy.sim.vllm_pod.reality import EXACT
from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.memory import EngineSettings, estimate
from vllm_remedy.vllm.outcomes import Failure
from vllm_remedy.vllm.startup_log import classify, parse_startup_log

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
RUNBOOK_GREP = re.compile(r"model loading took|gpu blocks|kv cache|maximum concurrency|out of memory|max seq len",
                          re.IGNORECASE)
BAD_TEMPLATE = {"spec": {"template": {"spec": {
    "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L4"},
    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
    "containers": [{"name": "vllm", "args": [LLAMA, "--gpu-memory-utilization", "0.90", "--max-num-seqs", "64"]}]}}}}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    """The packaged runbook seed on the vLLM runtime at 600x, then revision 4 (no --max-model-len, on L4)."""
    tmp: Path = tmp_path_factory.mktemp("vllm-api")
    cluster = Cluster("a", clock=Clock(speed=600), reality=EXACT)  # compares logs with estimate() number for number
    install(cluster)
    cluster.start()
    cluster.apply_seed("runbook", wait=True, timeout=30)
    server = SimServer([cluster])
    server.start()
    sim = Sim(server, {"a": cluster}, kubeconfig.write(tmp / "kubeconfig", server.url, ["a"]), tmp)
    yield sim
    cluster.stop()
    server.stop()


def pods(sim: Sim) -> list[dict]:
    _, _, body = call(sim.url(), "GET", "/api/v1/namespaces/llm/pods?labelSelector=app%3Dllama-8b")
    return body["items"]


def crash_looping(sim: Sim) -> list[dict]:
    return [p for p in pods(sim) if "CrashLoopBackOff" in json.dumps(p["status"].get("containerStatuses"))]


def test_seed_current_revision_serves_on_l40s(world):
    ready = [p for p in pods(world) if p["status"]["containerStatuses"][0]["ready"]]
    assert len(ready) == 2 and {p["spec"]["nodeName"][:8] for p in ready} == {"gpu-l40s"}
    name = ready[0]["metadata"]["name"]
    status, kind, text = call(world.url(), "GET", f"/api/v1/namespaces/llm/pods/{name}/log")
    report = parse_startup_log(text)
    est = estimate(catalog.model(LLAMA), catalog.gpu("NVIDIA-L40S"),
                   EngineSettings.from_flags({"max-model-len": "16384", "max-num-seqs": "64"}, "0.8.5"))
    assert (status, classify(report), report.vllm_version) == (200, Failure.NONE, "0.8.5")
    assert (report.kv_cache_tokens, report.max_concurrency) == (est.kv_cache_tokens, round(est.max_concurrency, 2))
    status, kind, metrics = call(world.url(), "GET", f"/api/v1/namespaces/llm/pods/{name}:8000/proxy/metrics")
    assert status == 200 and kind.startswith("text/plain; version=0.0.4")
    assert f'vllm:gpu_cache_usage_perc{{model_name="{LLAMA}",engine="0"}} 0.0' in metrics


def test_bad_rollout_to_l4_crash_loops_and_the_runbook_grep_names_the_cause(world):
    status, _, _ = call(world.url(), "PATCH", "/apis/apps/v1/namespaces/llm/deployments/llama-8b", BAD_TEMPLATE,
                        content_type="application/strategic-merge-patch+json")
    assert status == 200
    cluster = world.clusters["a"]
    seen: list[dict] = []  # the pod as the wait saw it: a second read may find it Running again between back-offs
    assert cluster.wait_for(lambda: bool(seen.extend(crash_looping(world)) or seen), 60)  # real s: under load
    bad = seen[0]
    assert bad["spec"]["nodeName"].startswith("gke-l4")
    status, _, text = call(world.url(), "GET", f"/api/v1/namespaces/llm/pods/{bad['metadata']['name']}/log"
                           "?previous=true")
    assert status == 200 and classify(parse_startup_log(text)) is Failure.MAX_LEN_EXCEEDS_KV
    kubectl = world.kubectl("32", "-n", "llm", "logs", bad["metadata"]["name"], "--previous")
    assert kubectl.returncode == 0, kubectl.stderr
    grepped = [line for line in kubectl.stdout.splitlines() if RUNBOOK_GREP.search(line)][-20:]
    est = estimate(catalog.model(LLAMA), catalog.gpu("NVIDIA-L4"),
                   EngineSettings.from_flags({"max-num-seqs": "64"}, "0.8.5"))
    assert len(grepped) == 2
    assert grepped[0].endswith(f"Model loading took {est.weights_gib:.4f} GiB and "
                               f"{20 + 4 * est.weights_gib - 8:.6f} seconds")
    assert grepped[1].endswith(
        f"ValueError: To serve at least one request with the models's max seq len (131072), "
        f"({est.needed_kv_gib:.2f} GiB KV cache is needed, which is larger than the available KV cache memory "
        f"({est.kv_cache_gib:.2f} GiB). Based on the available memory,  Try increasing `gpu_memory_utilization` "
        "or decreasing `max_model_len` when initializing the engine.")
    # The old ReplicaSet keeps serving (maxUnavailable 0): the endpoint is degraded, not down.
    assert sum(p["status"]["containerStatuses"][0]["ready"] for p in pods(world)) == 2

