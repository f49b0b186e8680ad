"""The rehearsal cluster's vLLM pods get their model from the Hub as vLLM does at each container start
(tests/fixtures/hf_hub_server through HF_ENDPOINT, never the real Hub):

- each (model, revision) on its own: a pod pinning ``--revision`` gets that revision's config, or vLLM's refusal
  when the Hub has no such revision, whatever another pod resolved at ``main`` before;
- at each start: a Hub that failed one start is asked again at the next (a restart after it recovers serves);
- with the pod's own HF_TOKEN / HF_ENDPOINT, not the cluster process's.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fixtures.hf_hub_server import SMOLLM2_CONFIG, HubServer, Repo, hub_server, use_hub
from fixtures.sim_world import l40s_pod_cluster
from vllm_remedy.sim.cluster import Cluster

MODEL, GATED = "acme-corp/SmolLM2-Hub-Pods", "acme-corp/SmolLM2-Gated-Pods"
#: a second gated repository for the pod without a token: two pods starting together on one model share
#: ``vllm.resolved``'s entry, which is keyed without the pod's env (a known race of the rehearsal, see the test)
SHORT = {**SMOLLM2_CONFIG, "max_position_embeddings": 4096}  # revision v2: a 4k context
#: 0.19.0 with no Hub to ask (a 500, a refused connection): transformers' words, not vLLM's "Invalid repository ID"
NO_HUB = "OSError: We couldn't connect to "


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[HubServer]:
    with hub_server({MODEL: Repo({"config.json": SMOLLM2_CONFIG}, revisions={"v2": {"config.json": SHORT}}),
                     GATED: Repo({"config.json": SMOLLM2_CONFIG}, gated=True)}) as server:
        use_hub(monkeypatch, server, tmp_path / "hf", timeout=5, drop_token=True)
        yield server


@pytest.fixture
def cluster(hub: HubServer) -> Iterator[Cluster]:
    with l40s_pod_cluster(4) as c:
        yield c


def pod(name: str, args: list[str], env: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "llm"},
            "spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"},
                     "containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.19.0", "command": ["vllm", "serve"],
                                     "args": args, "env": env or [],
                                     "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}


def logged(c: Cluster, name: str, text: str) -> bool:
    for previous in (False, True):
        try:
            if text in c.read_log("llm", name, previous=previous):
                return True
        except Exception:  # no container (or no earlier one) yet
            pass
    return False


def test_each_revision_is_resolved_on_its_own(cluster, hub):
    """Before: once a pod had resolved main, a pod pinning v9.9 (no such revision) served main's config, and one
    pinning v2 served lengths v2's config refuses."""
    cluster.store.create("pods", pod("main", [MODEL, "--max-model-len", "8192"]))
    assert cluster.wait_for(lambda: logged(cluster, "main", "GPU KV cache size"), 30)
    cluster.store.create("pods", pod("nosuch", [MODEL, "--revision", "v9.9", "--max-model-len", "8192"]))
    cluster.store.create("pods", pod("short", [MODEL, "--revision", "v2", "--max-model-len", "8192"]))
    assert cluster.wait_for(lambda: logged(cluster, "nosuch", "OSError: v9.9 is not a valid git identifier"), 30)
    assert cluster.wait_for(lambda: logged(cluster, "short", "max_position_embeddings=4096"), 30)
    assert not logged(cluster, "short", "GPU KV cache size")
    assert ("GET", f"/{MODEL}/resolve/v2/config.json") in hub.requests, hub.requests


def test_a_hub_that_failed_one_start_is_asked_again_at_the_next(cluster, hub):
    """Before: the first start's failure was kept for the cluster's life, and the pod crash-looped after the Hub
    recovered; vLLM asks again at each container start."""
    hub.repos[MODEL].misbehave = "error-500"
    cluster.store.create("pods", pod("flaky", [MODEL, "--max-model-len", "8192"]))
    assert cluster.wait_for(lambda: logged(cluster, "flaky", NO_HUB), 30)
    hub.repos[MODEL].misbehave = None
    assert cluster.wait_for(lambda: logged(cluster, "flaky", "GPU KV cache size"), 30)


def test_the_pods_own_token_and_endpoint(cluster, hub):
    """Before: the cluster process's environment was used: a gated model crash-looped though its pod set a token
    with access, and a pod pointed at an unreachable mirror served from the cluster's Hub."""
    cluster.store.create("pods", pod("token", [GATED, "--max-model-len", "8192"],
                                     [{"name": "HF_TOKEN", "value": "hf_pod"}]))
    # the same gated repository, started together: each pod gets the answer its own token gets
    cluster.store.create("pods", pod("notoken", [GATED, "--max-model-len", "8192"]))
    cluster.store.create("pods", pod("mirror", [MODEL, "--max-model-len", "8192"],
                                     [{"name": "HF_ENDPOINT", "value": "http://127.0.0.1:1"}]))
    assert cluster.wait_for(lambda: logged(cluster, "token", "GPU KV cache size"), 30)
    assert cluster.wait_for(lambda: logged(cluster, "notoken", "OSError: You are trying to access a gated repo."), 30)
    assert cluster.wait_for(lambda: logged(cluster, "mirror", f"{NO_HUB}'http://127.0.0.1:1'"), 30)
    assert not logged(cluster, "mirror", "GPU KV cache size")
