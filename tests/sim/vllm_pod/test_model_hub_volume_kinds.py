"""A rehearsal pod's Hugging Face cache is read-only when the pod's volume is, not only when its mount says so: a
PersistentVolumeClaim with ``readOnly: true`` and a ConfigMap / Secret / projected volume (which the kubelet always
mounts read-only) refuse vLLM's download as a ``readOnly`` mount does (tests/fixtures/hf_hub_server through
HF_ENDPOINT; the served cluster and the kubernetes client; ``sim.vllm_pod.hf_cache``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from fixtures.hf_hub_server import SMOLLM2_CONFIG, HubServer, Repo, hub_server, use_hub
from fixtures.served_pods import run, served

MODEL = "acme-corp/SmolLM2-Volume-Kinds"
RO = f"OSError: [Errno 30] Read-only file system: '/data/hf/hub/models--{MODEL.replace('/', '--')}'"


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HubServer]:
    with pytest.MonkeyPatch.context() as mp, hub_server({MODEL: Repo({"config.json": SMOLLM2_CONFIG})}) as server:
        use_hub(mp, server, tmp_path_factory.mktemp("hf"), timeout=5, drop_token=True)
        yield server


@pytest.fixture(scope="module")
def api(hub: HubServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    for core in served(tmp_path_factory.mktemp("kube")):  # the ConfigMap and Secret exist (no PVCs are served)
        core.create_namespaced_config_map("llm", {"metadata": {"name": "hf-cache"}, "data": {"README": "cache"}})
        core.create_namespaced_secret("llm", {"metadata": {"name": "hf-cache"}, "stringData": {"token": "x"}})
        yield core


def start(api: Any, name: str, volume: dict[str, Any]) -> tuple[str, int | None]:
    """A pod whose HF_HOME lies on ``volume``, mounted without ``readOnly``."""
    return run(api, name, "vllm/vllm-openai:v0.19.0", ["vllm", "serve"], [MODEL, "--max-model-len", "4096"],
               env={"HF_HOME": "/data/hf"}, mounts=[{"name": "models", "mountPath": "/data"}],
               volumes=[{"name": "models", **volume}])


READ_ONLY = {
    "pvc-read-only": {"persistentVolumeClaim": {"claimName": "hf-cache", "readOnly": True}},
    "configmap": {"configMap": {"name": "hf-cache"}},
    "secret": {"secret": {"secretName": "hf-cache"}},
    "projected": {"projected": {"sources": [{"configMap": {"name": "hf-cache"}}]}},
}


@pytest.mark.parametrize("name", list(READ_ONLY))
def test_a_read_only_volume_refuses_the_download(api, name: str) -> None:
    """Before: each served, as if its vLLM could write the download into a volume the kubelet mounts read-only."""
    log, code = start(api, name, READ_ONLY[name])
    assert code == 1 and RO in log, log[-2000:]


def test_a_writable_claim_takes_the_download(api) -> None:
    log, code = start(api, "pvc-writable", {"persistentVolumeClaim": {"claimName": "hf-cache"}})
    assert code is None and "GPU KV cache size" in log, log[-2000:]
