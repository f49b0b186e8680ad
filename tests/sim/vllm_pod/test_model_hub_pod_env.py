"""Rehearsal pods on one gated repository, one with a token and one without, each get their own answer, however their
starts interleave (tests/fixtures/hf_hub_server through HF_ENDPOINT; the served cluster and the kubernetes client).

What one pod's start learned must not become another's: each pod's vLLM downloads into its own container's cache
with its own token, so a config.json fetched with one pod's token is no answer for a pod without one.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from fixtures.hf_hub_server import SMOLLM2_COMMIT, SMOLLM2_CONFIG, HubServer, Repo, hub_server, use_hub
from fixtures.served_pods import ended, served

GATED = "acme-corp/SmolLM2-Gated-Pod-Env"
REFUSED = "OSError: You are trying to access a gated repo."  # 0.19.0: transformers' words (hub_refusal)


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[HubServer]:
    with hub_server({GATED: Repo({"config.json": SMOLLM2_CONFIG}, gated=True)}) as server:
        use_hub(monkeypatch, server, tmp_path / "hf", timeout=5, drop_token=True)
        yield server


@pytest.fixture
def api(hub: HubServer, tmp_path: Path) -> Iterator[Any]:
    yield from served(tmp_path)


def create(api: Any, name: str, token: str | None, *extra: str) -> None:
    container = {"name": "vllm", "image": "vllm/vllm-openai:v0.19.0", "command": ["vllm", "serve"],
                 "args": [GATED, "--max-model-len", "4096", *extra],
                 "env": [{"name": "HF_TOKEN", "value": token}] if token else [],
                 "readinessProbe": {"httpGet": {"path": "/health", "port": 8000}},
                 "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    api.create_namespaced_pod("llm", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                                      "spec": {"containers": [container]}})


def test_concurrent_pods_on_one_gated_repo_each_get_their_own_answer(api, hub: HubServer) -> None:
    """Before: the pod without a token served — on the config.json the pod with one had just put in the shared
    cache (the Hub's 401 to it was taken for a Hub that failed, and the cached copy stood in)."""
    pairs = 4
    for i in range(pairs):  # each pair created together: their starts interleave in the kubelet's threads
        create(api, f"token-{i}", "hf_pod")
        create(api, f"none-{i}", None)
    names = [f"{kind}-{i}" for i in range(pairs) for kind in ("token", "none")]
    with ThreadPoolExecutor(len(names)) as pool:
        got = dict(zip(names, pool.map(lambda name: ended(api, name, "vllm"), names), strict=True))
    for i in range(pairs):
        log, code = got[f"token-{i}"]
        assert code is None and "GPU KV cache size" in log, log[-2000:]
        log, code = got[f"none-{i}"]
        assert code == 1 and REFUSED in log, log[-2000:]
    assert hub.authorized, hub.requests  # the pods with a token sent it


def test_a_pod_without_a_token_after_one_with_a_token_is_refused(api, hub: HubServer) -> None:
    """Before: once a pod with a token had served, every later pod without one served too, from the cache."""
    create(api, "first", "hf_pod")
    log, code = ended(api, "first", "vllm")
    assert code is None, log[-2000:]
    create(api, "later", None)
    log, code = ended(api, "later", "vllm")
    assert code == 1 and REFUSED in log, log[-2000:]


def test_a_pod_pinned_to_a_commit_another_pod_fetched_still_asks_the_hub(api, hub: HubServer) -> None:
    """Before: a commit's cached snapshot is read without a request, so the pod without a token served the copy the
    pod with one had fetched; its own vLLM has no such copy and asks the Hub, which refuses it."""
    create(api, "pinned", "hf_pod", "--revision", SMOLLM2_COMMIT)
    log, code = ended(api, "pinned", "vllm")
    assert code is None, log[-2000:]
    create(api, "pinned-none", None, "--revision", SMOLLM2_COMMIT)
    log, code = ended(api, "pinned-none", "vllm")
    assert code == 1 and REFUSED in log, log[-2000:]
