"""A rehearsal pod whose Hugging Face cache (HF_HOME) is a read-only volume starts only on what the volume holds, as
vLLM does (tests/fixtures/hf_hub_server through HF_ENDPOINT; the served cluster and the kubernetes client; the log
read back by the CLI's diagnose).

huggingface_hub writes a download into the cache before returning it, so on a read-only mount an uncached config is
vLLM's ``OSError: [Errno 30] Read-only file system``, while a cached one still serves, online (the Hub names the
commit the volume holds: nothing to write) and offline (``sim.vllm_pod.hf_cache``). A copy already in the cluster's
cache before the pods ran stands for what the volume was filled with; one the cluster downloads is not on it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import huggingface_hub
import pytest

from fixtures.hf_hub_server import SMOLLM2_CONFIG, HubServer, Repo, hub_server, use_hub
from fixtures.served_pods import run, served

MODEL = "acme-corp/SmolLM2-Cache-Volume"
RO = f"OSError: [Errno 30] Read-only file system: '/data/hf/hub/models--{MODEL.replace('/', '--')}'"


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[HubServer]:
    with hub_server({MODEL: Repo({"config.json": SMOLLM2_CONFIG})}) as server:
        use_hub(monkeypatch, server, tmp_path / "hf", timeout=5, drop_token=True)
        yield server


@pytest.fixture
def api(hub: HubServer, tmp_path: Path) -> Iterator[Any]:
    yield from served(tmp_path / "kube")


def seed(hub: HubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The volume filled before the pods run: huggingface_hub's own download into the cluster's cache."""
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    huggingface_hub.hf_hub_download(MODEL, "config.json", cache_dir=str(tmp_path / "hf" / "hub"), endpoint=hub.url)


def start(api: Any, name: str, read_only: bool = True, offline: bool = False) -> tuple[str, int | None]:
    return run(api, name, "vllm/vllm-openai:v0.19.0", ["vllm", "serve"], [MODEL, "--max-model-len", "4096"],
               env={"HF_HOME": "/data/hf", **({"HF_HUB_OFFLINE": "1"} if offline else {})},
               mounts=[{"name": "models", "mountPath": "/data", "readOnly": read_only}],
               volumes=[{"name": "models", "emptyDir": {}}])


def test_an_uncached_model_on_a_read_only_cache_is_the_mounts_refusal(api, cli, tmp_path: Path) -> None:
    """Before: the pod served, as if its vLLM could write the download into a read-only volume."""
    log, code = start(api, "ro-empty")
    assert code == 1 and RO in log, log[-2000:]
    saved = tmp_path / "pod.log"
    saved.write_text(log)
    got = cli("diagnose", "--log", str(saved), "-o", "json")
    data = json.loads(got.stdout)
    assert (data["failure"], data["failure_detail"]["reason"], data["failure_detail"]["model"]) == (
        "model_unavailable", "cache_read_only", MODEL), data
    log, code = start(api, "rw-empty", read_only=False)  # the same volume writable: the download lands, it serves
    assert code is None and "GPU KV cache size" in log, log[-2000:]


def test_a_read_only_cache_holding_the_model_serves_online_and_offline(api, hub: HubServer, tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    seed(hub, tmp_path, monkeypatch)
    for name, offline in (("ro-online", False), ("ro-offline", True)):
        log, code = start(api, name, offline=offline)
        assert code is None and "GPU KV cache size" in log, (name, log[-2000:])
    hub.repos[MODEL].move({"config.json": {**SMOLLM2_CONFIG, "max_position_embeddings": 4096}})
    log, code = start(api, "ro-moved")  # main now names a commit the volume lacks: the download cannot be written
    assert code == 1 and RO in log, log[-2000:]
