"""A rehearsal pod starts when this machine's Hugging Face cache is read-only (tests/fixtures/hf_hub_server through
HF_ENDPOINT, never the real Hub).

The cluster resolves a pod's model in-process with this machine's cache; the pod in the world it rehearses has its own
cache (the container's filesystem), which vLLM writes the download into. So a read-only cache here is no reason for the
pod to fail: the Hub's answer, held in memory, is the config it starts from.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from fixtures.hf_hub_server import SMOLLM2_CONFIG, HubServer, Repo, hub_server, use_hub
from fixtures.read_only import read_only
from fixtures.sim_world import l40s_pod_cluster
from vllm_remedy.sim.cluster import Cluster

MODEL = "acme-corp/SmolLM2-Read-Only-Cache"


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[HubServer]:
    with hub_server({MODEL: Repo({"config.json": SMOLLM2_CONFIG})}) as server:
        use_hub(monkeypatch, server, tmp_path / "hf", timeout=5, drop_token=True)
        yield server


def logged(c: Cluster, name: str, text: str) -> bool:
    try:
        return text in c.read_log("llm", name)
    except Exception:  # no container yet
        return False


def test_a_pod_starts_on_the_hubs_answer_when_this_machines_cache_is_read_only(hub, tmp_path):
    """Before: CrashLoopBackOff with "Invalid repository ID or local directory specified" although the Hub had
    answered 200: the cache's refusal to store the file was taken for the Hub's failure."""
    with read_only(tmp_path / "hf" / "hub"), l40s_pod_cluster(4) as c:
        c.store.create("pods", {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "ro", "namespace": "llm"},
            "spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"},
                     "containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.19.0",
                                     "command": ["vllm", "serve"], "args": [MODEL, "--max-model-len", "8192"],
                                     "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}})
        assert c.wait_for(lambda: logged(c, "ro", "GPU KV cache size"), 8), c.read_log("llm", "ro")
    assert ("GET", f"/{MODEL}/resolve/main/config.json") in hub.requests
