"""Two rehearsal pods on one model id whose Hubs differ (their own HF_ENDPOINT) apply their --hf-overrides each to the
config.json its own Hub gave, however their starts interleave (two tests/fixtures/hf_hub_server instances serving
different configs under one repository id; ``vllm.hf_overrides`` keys its base configs by ``hub.pod.key``).

The interleaving is forced the way two clusters' kubelets (one thread each) can meet: pod A resolves its model, pod B
resolves the same id from its own Hub, then A applies its overrides. The calls are the pod start's own
(``model_lookup.model_spec``, then ``hf_config_flags.overridden``, as ``launch.plan`` makes them), against real
servers; only their order is set, with a barrier. The served clusters then start such pods end to end.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fixtures.hf_hub_server import SMOLLM2_CONFIG, HubServer, Repo, hub_server, use_hub
from fixtures.sim_world import l40s_pod_cluster
from vllm_remedy.sim.cluster import Cluster
from vllm_remedy.sim.vllm_pod import hf_config_flags
from vllm_remedy.sim.vllm_pod.model_lookup import model_spec
from vllm_remedy.vllm.catalog import ModelSpec

MODEL = "acme-corp/SmolLM2-Two-Mirrors"
#: the mirror's config of the same id (another commit): twice as wide, so a layer count override prices different
#: weights on it
WIDE = {**SMOLLM2_CONFIG, "hidden_size": 4096, "intermediate_size": 16384}
FLAGS = {"hf-overrides": '{"num_hidden_layers": 12}'}
V = (0, 19, 0)


@pytest.fixture
def hubs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[HubServer, HubServer]]:
    with hub_server({MODEL: Repo({"config.json": SMOLLM2_CONFIG})}) as first, \
            hub_server({MODEL: Repo({"config.json": WIDE}, commit="b" * 40)}) as mirror:
        use_hub(monkeypatch, first, tmp_path / "hf", timeout=5, drop_token=True)
        yield first, mirror


def container(endpoint: str | None) -> dict[str, Any]:
    return {"name": "vllm", "env": [{"name": "HF_ENDPOINT", "value": endpoint}] if endpoint else []}


def start(pod: dict[str, Any]) -> ModelSpec:
    """What ``launch.plan`` does with a pod's model: resolve it with the pod's env, apply --hf-overrides."""
    return hf_config_flags.overridden(model_spec(MODEL, None, pod), MODEL, None, FLAGS, V)


def test_interleaved_starts_each_apply_their_overrides_to_their_own_config(hubs) -> None:
    """Before: pod A's 12 layers were priced on the mirror's config that pod B had just read (its own spec with the
    mirror's parameter count)."""
    _, mirror = hubs
    a, b = container(None), container(mirror.url)
    alone = {"a": start(a), "b": start(b)}  # each start on its own: the answer to compare with
    assert alone["a"].params_b < alone["b"].params_b
    resolved, b_read = threading.Barrier(2), threading.Barrier(2)
    got: dict[str, ModelSpec] = {}

    def pod_a() -> None:
        spec = model_spec(MODEL, None, a)
        resolved.wait()
        b_read.wait()  # B has read the mirror's config meanwhile
        got["a"] = hf_config_flags.overridden(spec, MODEL, None, FLAGS, V)

    def pod_b() -> None:
        resolved.wait()
        got["b"] = start(b)
        b_read.wait()

    threads = [threading.Thread(target=pod_a), threading.Thread(target=pod_b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert got["a"].params_b == pytest.approx(alone["a"].params_b), (got["a"].params_b, alone)
    assert got["b"].params_b == pytest.approx(alone["b"].params_b), (got["b"].params_b, alone)


def pod(name: str, endpoint: str | None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "llm"},
            "spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"},
                     "containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.19.0", "command": ["vllm", "serve"],
                                     "args": [MODEL, "--max-model-len", "4096",
                                              "--hf-overrides", FLAGS["hf-overrides"]],
                                     "env": container(endpoint)["env"],
                                     "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}


def loading(c: Cluster, name: str) -> str | None:
    """The pod's "Model loading took ..." line once it has one."""
    try:
        log = c.read_log("llm", name)
    except Exception:  # no container yet
        return None
    return next((line.split("Model loading took", 1)[1] for line in log.splitlines() if "Model loading took" in line),
                None)


def test_two_clusters_start_pods_on_two_mirrors_each_on_its_own_config(hubs) -> None:
    """Two clusters (a kubelet thread each) start pods of one id on two Hubs at once: each pod's weights are its own
    config's under the overrides, as when it starts alone."""
    _, mirror = hubs
    with l40s_pod_cluster(8) as one, l40s_pod_cluster(8) as other:
        for i in range(3):
            one.store.create("pods", pod(f"first-{i}", None))
            other.store.create("pods", pod(f"mirror-{i}", mirror.url))
        assert one.wait_for(lambda: all(loading(one, f"first-{i}") for i in range(3)), 30)
        assert other.wait_for(lambda: all(loading(other, f"mirror-{i}") for i in range(3)), 30)
        firsts = {loading(one, f"first-{i}") for i in range(3)}
        mirrors = {loading(other, f"mirror-{i}") for i in range(3)}
    assert len(firsts) == 1 and len(mirrors) == 1 and firsts != mirrors, (firsts, mirrors)
