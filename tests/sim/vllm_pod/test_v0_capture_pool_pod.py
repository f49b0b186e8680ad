"""The rehearsal pod's V0 graph capture follows vLLM: its pool is sized by max_num_seqs (the sizes V0 captures,
worker/model_runner.py@0.6.3 ``capture_model``), and its log carries V0's second capture line, the one that names
max_num_seqs, where that release prints it apart (model_runner.py@0.5.5-0.6.5; from 0.6.6 it is the first line's
tail). A review saw a 0.6.3 pod at --max-num-seqs 8 die with the pool of 256."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from fixtures.sim_world import l40s_pod_cluster
from vllm_remedy.sim.cluster import Cluster
from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.memory import EngineSettings, estimate
from vllm_remedy.vllm.outcomes import Failure
from vllm_remedy.vllm.startup_log import classify, parse_startup_log

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
HINT = "You can also reduce the `max_num_seqs` as needed to decrease memory usage."
POOLS = re.compile(r"with ([\d.]+) (MiB|GiB) allocated in private pools")


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with l40s_pod_cluster(2) as c:  # reality EXACT: logs number for number with estimate()
        yield c


def _pod(name: str, version: str, seqs: int) -> dict:
    args = [LLAMA, "--max-model-len", "8192", "--gpu-memory-utilization", "0.98", "--max-num-seqs", str(seqs)]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "llm"},
            "spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"},
                     "containers": [{"name": "vllm", "image": f"vllm/vllm-openai:v{version}",
                                     "command": ["vllm", "serve"], "args": args, "ports": [{"containerPort": 8000}],
                                     "readinessProbe": {"httpGet": {"path": "/health", "port": 8000}},
                                     "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}


def _status(c: Cluster, name: str) -> dict:
    statuses = (c.store.get("pods", "llm", name).get("status") or {}).get("containerStatuses") or []
    return statuses[0] if statuses else {}


def _predicted(version: str, seqs: int):
    flags = {"max-model-len": "8192", "gpu-memory-utilization": "0.98", "max-num-seqs": str(seqs)}
    return estimate(catalog.model(LLAMA), catalog.gpu("NVIDIA-L40S"), EngineSettings.from_flags(flags, version))


def test_a_v0_pod_dies_capturing_the_pool_its_max_num_seqs_captures(cluster: Cluster) -> None:
    cluster.store.create("pods", _pod("s64", "0.6.3", 64))
    assert cluster.wait_for(lambda: "CrashLoopBackOff" in str(_status(cluster, "s64").get("state")), 8)
    text = cluster.read_log("llm", "s64", previous=True)
    assert classify(parse_startup_log(text)) is Failure.CUDAGRAPH_CAPTURE_OOM
    est, default = _predicted("0.6.3", 64), _predicted("0.6.3", 256)
    assert est.graph_capture_oom and est.cudagraph_gib < default.cudagraph_gib
    value, unit = POOLS.search(text).groups()  # type: ignore[union-attr]
    pools = float(value) / (1024 if unit == "MiB" else 1)
    assert pools == pytest.approx(est.cudagraph_gib, abs=0.001)  # 64 sequences' graphs, not 256's
    assert text.count(HINT) == 1 and "CUDA graphs can take additional 1~3 GiB memory per GPU." in text


def test_a_v0_pod_at_few_sequences_starts_where_the_default_dies(cluster: Cluster) -> None:
    assert _predicted("0.6.3", 256).graph_capture_oom and _predicted("0.6.3", 8).fits
    cluster.store.create("pods", _pod("s8", "0.6.3", 8))
    assert cluster.wait_for(lambda: _status(cluster, "s8").get("ready") is True, 8), _status(cluster, "s8")


@pytest.mark.parametrize(("version", "second"), [
    ("0.6.3", "CUDA graphs can take additional 1~3 GiB memory per GPU. If you are running out of memory, consider "
              "decreasing `gpu_memory_utilization` or enforcing eager mode. " + HINT),
    ("0.6.4", "If out-of-memory error occurs during cudagraph capture, consider decreasing `gpu_memory_utilization` "
              "or switching to eager mode. " + HINT),
    ("0.6.6", None)])
def test_v0s_second_capture_line_as_each_release_prints_it(cluster: Cluster, version: str, second: str | None) -> None:
    cluster.store.create("pods", _pod("up", version, 8))
    assert cluster.wait_for(lambda: _status(cluster, "up").get("ready") is True, 8), _status(cluster, "up")
    lines = cluster.read_log("llm", "up").splitlines()
    first = next(i for i, line in enumerate(lines) if "This may lead to unexpected consequences" in line)
    if second is None:  # one line: the hint is its tail
        assert lines[first].endswith(HINT) and sum(HINT in line for line in lines) == 1
    else:
        assert lines[first + 1].endswith(f"] {second}"), lines[first + 1]
