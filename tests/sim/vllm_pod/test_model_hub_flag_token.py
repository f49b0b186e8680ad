"""A rehearsal pod passing vLLM's own ``--hf-token`` (no HF_TOKEN in its env) on a gated repository
(tests/fixtures/hf_hub_server through HF_ENDPOINT; the served cluster and the kubernetes client): from 0.19.0 vLLM
reads config.json with the flag's token (``get_config(token=self.hf_token)``), so the pod starts; before, the reads
send the environment's token whatever the flag says, so 0.18.0 is refused. Before the fix every release was refused."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fixtures.hf_hub_server import SMOLLM2_CONFIG, HubServer, Repo, hub_server, use_hub
from fixtures.served_pods import ended, served

GATED = "acme-corp/SmolLM2-Gated-Flag"


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[HubServer]:
    with hub_server({GATED: Repo({"config.json": SMOLLM2_CONFIG}, gated=True)}) as server:
        use_hub(monkeypatch, server, tmp_path / "hf", timeout=5, drop_token=True)
        yield server


@pytest.fixture
def api(hub: HubServer, tmp_path: Path) -> Iterator[Any]:
    yield from served(tmp_path)


def create(api: Any, name: str, release: str, *flags: str) -> None:
    container = {"name": "vllm", "image": f"vllm/vllm-openai:v{release}", "command": ["vllm", "serve"],
                 "args": [GATED, "--max-model-len", "4096", *flags],
                 "readinessProbe": {"httpGet": {"path": "/health", "port": 8000}},
                 "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    api.create_namespaced_pod("llm", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                                      "spec": {"containers": [container]}})


def test_the_flags_token_opens_a_gated_repo_from_0_19_only(api, hub: HubServer) -> None:
    create(api, "flag-34", "0.34.0", "--hf-token", "hf_pod")
    log, code = ended(api, "flag-34", "vllm")
    assert code is None and "GPU KV cache size" in log, log[-2000:]
    assert hub.authorized, hub.requests  # the flag's token was sent
    create(api, "flag-18", "0.18.0", "--hf-token", "hf_pod")
    log, code = ended(api, "flag-18", "vllm")
    assert code == 1 and "gated repo" in log, log[-2000:]
