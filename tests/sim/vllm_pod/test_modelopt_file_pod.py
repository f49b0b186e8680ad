"""A rehearsal vLLM pod of a ModelOpt checkpoint whose scheme is in ``hf_quant_config.json`` (tests/fixtures/
hf_hub_server through HF_ENDPOINT, never the real Hub) starts as each release reads it: 0.19.0 loads modelopt FP8
weights (the file read and mapped from 0.10.1: transformers_utils/config.py@0.10.1 l.497-505,
config/__init__.py@0.10.1 l.1064-1084); 0.9.0 never reads the file and loads the FP8 tensors into 16-bit layers,
which is not predicted (quant_source.NOT_READ). Before: 0.9.0 refused the start ("Unknown quantization method: .")
and 0.19.0 died on "cannot predict"."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from fixtures.hf_hub_server import SMOLLM2_CONFIG, HubServer, Repo, hub_server, use_hub
from vllm_remedy.sim.clock import Clock
from vllm_remedy.sim.cluster import Cluster
from vllm_remedy.sim.seed import make_node
from vllm_remedy.sim.vllm_pod import install
from vllm_remedy.sim.vllm_pod.reality import EXACT

MODEL = "acme-corp/SmolLM2-NV-FP8-Pods"
MODELOPT = {"producer": {"name": "modelopt", "version": "0.27.0"},
            "quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8", "exclude_modules": ["lm_head"]}}


@pytest.fixture
def cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Cluster, HubServer]]:
    with hub_server({MODEL: Repo({"config.json": SMOLLM2_CONFIG, "hf_quant_config.json": MODELOPT})}) as server:
        use_hub(monkeypatch, server, tmp_path / "hf", timeout=5)
        c = Cluster("t", clock=Clock(speed=600), reality=EXACT)
        install(c)
        c.store.create("nodes", make_node({"name": "l4-1", "gpu": {"product": "NVIDIA-L4", "count": 2}}, "t"))
        c.start()
        try:
            yield c, server
        finally:
            c.stop()


def pod(name: str, release: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "llm"},
            "spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L4"},
                     "containers": [{"name": "vllm", "image": f"vllm/vllm-openai:v{release}",
                                     "command": ["vllm", "serve"], "args": [MODEL, "--max-model-len", "8192"],
                                     "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}


def log(c: Cluster, name: str) -> str:
    try:
        return c.read_log("llm", name)
    except Exception:  # no container yet
        return ""


def loaded_gib(text: str) -> float:
    found = re.search(r"Model loading took ([0-9.]+) ?GiB", text)
    assert found, text[-2000:]
    return float(found.group(1))


def test_each_release_loads_what_it_reads(cluster):
    c, _ = cluster
    c.store.create("pods", pod("new", "0.19.0"))
    c.store.create("pods", pod("old", "0.9.0"))
    assert c.wait_for(lambda: "GPU KV cache size" in log(c, "new") and "hf_quant_config.json" in log(c, "old"), 10), (
        log(c, "new")[-1500:], log(c, "old")[-1500:])
    assert loaded_gib(log(c, "new")) < 2.0, log(c, "new")  # FP8 linear layers, not SmolLM2's 3.2 GiB at 16 bits
    assert "GPU KV cache size" not in log(c, "old") and "Unknown quantization method" not in log(c, "old")
