"""A live Deployment whose HF_ENDPOINT comes from a ConfigMap is predicted against that ConfigMap's Hub.

Real ``vllm-remedy drift`` and the real pyinfra CLI (deploys/budget.py --dry) on the rehearsal cluster, with two
Hub-compatible servers: the pods' mirror (named in the ConfigMap ``hf``) holds the model; the operator's shell names
another Hub that holds nothing. Before, the connector read the pod's HF_ENDPOINT only as a literal, so the shell's Hub
was asked and its 401 reported as the pod's certain failure (model_unavailable). A Deployment whose ConfigMap is
not in the cluster is "cannot predict", never the shell's answer."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fixtures.hf_hub_server import SMOLLM2_CONFIG, HubServer, Repo, hub_server, use_hub
from fixtures.pyinfra_run import ROOT, Rehearsal, host_lines
from vllm_remedy.sim import kubeconfig as sim_kubeconfig
from vllm_remedy.sim.cluster import Cluster
from vllm_remedy.sim.server import SimServer
from vllm_remedy.sim.vllm_pod.reality import EXACT

MODEL = "acme-corp/Smol-Mirrored"
HOSTS = {"smol-a": "hf", "smol-b": "hf-absent"}
BUDGET = str(ROOT / "deploys" / "budget.py")


def _deployment(name: str, config_map: str) -> dict[str, Any]:
    container = {"name": "vllm", "image": "vllm/vllm-openai:v0.10.1", "command": ["vllm", "serve"],
                 "args": [MODEL, "--max-model-len", "4096", "--gpu-memory-utilization", "0.9"],
                 "env": [{"name": "HF_ENDPOINT", "valueFrom": {"configMapKeyRef": {"name": config_map,
                                                                                   "key": "endpoint"}}}],
                 "ports": [{"name": "http", "containerPort": 8000}],
                 "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    return {"manifest": {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "llm",
                                                                    "labels": {"app": name}},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L4"},
                                       "containers": [container]}}}}}


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Rehearsal, str, HubServer, str]]:
    with hub_server({MODEL: Repo({"config.json": SMOLLM2_CONFIG})}) as mirror, \
            hub_server({}, public=True) as empty:
        use_hub(monkeypatch, mirror, tmp_path / "hf", drop_token=True)
        seed = {"namespaces": ["llm"],
                "nodes": [{"name": f"gpu-l4-{n}", "gpu": {"product": "NVIDIA-L4", "memoryMiB": 23034, "count": 1},
                           "cpu": "8", "memory": "64Gi"} for n in (1, 2)],
                "objects": [{"resource": "configmaps", "object": {
                    "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "hf", "namespace": "llm"},
                    "data": {"endpoint": mirror.url}}}],
                "deployments": [_deployment(name, cm) for name, cm in HOSTS.items()]}
        cluster = Cluster("rehearsal", speed=600.0, reality=EXACT)
        cluster.start()
        cluster.apply_seed(seed, wait=False, reality=EXACT)
        server = SimServer([cluster])
        server.start()
        sim = Rehearsal(server, {"rehearsal": cluster}, sim_kubeconfig.write(tmp_path / "kubeconfig", server.url,
                                                                             ["rehearsal"]), tmp_path)
        policy = tmp_path / "policy.yaml"
        policy.write_text(f"extends: {ROOT / 'policies' / 'default.yaml'}\ntarget:\n  namespaces: [llm]\n"
                          "  deployments: [smol-a, smol-b]\ngpu:\n  products: [NVIDIA-L4]\n  per_pod: 1\n")
        inventory = tmp_path / "inv.py"
        inventory.write_text(f"hosts = ({[f'@k8s/rehearsal/llm/{h}' for h in HOSTS]!r}, "
                             f"{{'policy': {str(policy)!r}, 'kubeconfig': {str(sim.kubeconfig)!r}}})\n")
        try:
            yield sim, str(inventory), empty, empty.url
        finally:
            sim.stop()


def test_drift_asks_the_hub_the_pods_configmap_names(world) -> None:
    sim, inventory, empty, shell_hub = world
    got = subprocess.run([sys.executable, "-m", "vllm_remedy", "drift", "-i", inventory], capture_output=True,
                         text=True, timeout=180, cwd=sim.tmp,
                         env=sim.env({"HF_HOME": str(sim.tmp / "operator-hf"), "HF_ENDPOINT": shell_hub}))
    a, b = got.stdout.split("\n2 host(s):")[0].split("@k8s/rehearsal/llm/smol-b:", 1)
    assert "prediction on NVIDIA-L4: fits" in a and "model_unavailable" not in a, got.stdout
    assert "fits" not in b and "model_unavailable" not in b and "HF_ENDPOINT comes from ConfigMap hf-absent" in b, \
        got.stdout
    assert [r for r in empty.requests if "/resolve/" in r[1]] == [], empty.requests  # the shell's Hub: not the pods'


def test_the_budget_predicts_with_the_configmaps_hub(world) -> None:
    sim, inventory, empty, shell_hub = world
    got = sim.pyinfra(inventory, BUDGET, "--dry", env={"HF_HOME": str(sim.tmp / "operator-hf"),
                                                       "HF_ENDPOINT": shell_hub})
    a = "\n".join(host_lines(got.stderr, "@k8s/rehearsal/llm/smol-a"))
    assert "fits" in a and "not found on the Hub" not in a and "no prediction" not in a, got.stderr
    assert [r for r in empty.requests if "/resolve/" in r[1]] == [], empty.requests
