"""Two Deployments on one gated model with different HF_TOKENs, through the real pyinfra CLI (deploys/budget.py --dry)
and ``vllm-remedy drift`` on the rehearsal cluster (tests/fixtures/hf_hub_server via HF_ENDPOINT): each host is
predicted with its own pod's token. pyinfra connects every host before any operation runs, and each host's model was
resolved at connect; before, every prediction read the last host's Hub answer, so the host whose token the Hub
refuses was "fits" or the one with a valid token was refused "(401: invalid credentials)"."""

from __future__ import annotations

import copy
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fixtures.hf_hub_server import SMOLLM2_CONFIG, Repo, hub_server, use_hub
from fixtures.pyinfra_run import ROOT, Rehearsal, host_lines
from vllm_remedy.sim import kubeconfig as sim_kubeconfig
from vllm_remedy.sim.cluster import Cluster
from vllm_remedy.sim.server import SimServer
from vllm_remedy.sim.vllm_pod.reality import EXACT

GATED = "acme-corp/SmolLM2-Gated"
HOSTS = {"smol-a": "hf_revoked", "smol-b": "hf_good"}
BUDGET = str(ROOT / "deploys" / "budget.py")


def _deployment(name: str, token: str) -> dict[str, Any]:
    container = {"name": "vllm", "image": "vllm/vllm-openai:v0.34.0", "command": ["vllm", "serve"],
                 "args": [GATED, "--max-model-len", "4096", "--gpu-memory-utilization", "0.9"],
                 "env": [{"name": "HF_TOKEN", "value": token}],
                 "ports": [{"name": "http", "containerPort": 8000}],
                 "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    return {"manifest": {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "llm",
                                                                    "labels": {"app": name}},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"},
                                       "containers": [copy.deepcopy(container)]}}}}}


SEED: dict[str, Any] = {
    "namespaces": ["llm"],
    "nodes": [{"name": f"gpu-l40s-{n}", "gpu": {"product": "NVIDIA-L40S", "memoryMiB": 46068, "count": 1},
               "cpu": "8", "memory": "64Gi"} for n in (1, 2)],
    "deployments": [_deployment(name, token) for name, token in HOSTS.items()],
}


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Rehearsal, str]]:
    with hub_server({GATED: Repo({"config.json": SMOLLM2_CONFIG}, gated=True)}) as hub:
        hub.refused.add("hf_revoked")
        use_hub(monkeypatch, hub, tmp_path / "hf", drop_token=True)
        cluster = Cluster("rehearsal", speed=600.0, reality=EXACT)
        cluster.start()
        cluster.apply_seed(SEED, wait=False, reality=EXACT)  # smol-a's pods never get ready: its token is refused
        server = SimServer([cluster])
        server.start()
        sim = Rehearsal(server, {"rehearsal": cluster}, sim_kubeconfig.write(tmp_path / "kubeconfig", server.url,
                                                                             ["rehearsal"]), tmp_path)
        policy = tmp_path / "policy.yaml"
        policy.write_text(f"extends: {ROOT / 'policies' / 'default.yaml'}\ntarget:\n  namespaces: [llm]\n"
                          "  deployments: [smol-a, smol-b]\ngpu:\n  products: [NVIDIA-L40S]\n  per_pod: 1\n")
        inventory = tmp_path / "inv.py"
        inventory.write_text(f"hosts = ({[f'@k8s/rehearsal/llm/{h}' for h in HOSTS]!r}, "
                             f"{{'policy': {str(policy)!r}, 'kubeconfig': {str(sim.kubeconfig)!r}}})\n")
        try:
            yield sim, str(inventory)
        finally:
            sim.stop()


def test_the_budget_predicts_each_host_with_its_own_pods_token(world) -> None:
    sim, inventory = world
    got = sim.pyinfra(inventory, BUDGET, "--dry", env={"HF_HOME": str(sim.tmp / "operator-hf")})  # not the pods' cache
    a = "\n".join(host_lines(got.stderr, "@k8s/rehearsal/llm/smol-a"))
    b = "\n".join(host_lines(got.stderr, "@k8s/rehearsal/llm/smol-b"))
    assert "refused the token (401" in a and "fits" not in a, got.stderr
    assert "fits" in b and "refused the token" not in b and "no prediction" not in b, got.stderr


def test_drift_reports_each_host_with_its_own_pods_token(world) -> None:
    sim, inventory = world
    got = subprocess.run([sys.executable, "-m", "vllm_remedy", "drift", "-i", inventory], capture_output=True,
                         text=True, timeout=180, cwd=sim.tmp, env=sim.env({"HF_HOME": str(sim.tmp / "operator-hf")}))
    a, b = got.stdout.split("\n2 host(s):")[0].split("@k8s/rehearsal/llm/smol-b:", 1)
    assert "??    prediction: model " in a and "refused the token (401" in a and "fits" not in a, got.stdout
    assert "ok    prediction: prediction on NVIDIA-L40S: fits" in b and "refused" not in b, got.stdout
