"""Cloud flavours of the rehearsal world: GKE's ExtendedResourceToleration admission, and a Karpenter/EKS fleet.

The GKE seed's Deployment writes no toleration for its tainted L4 pool: only the admission plugin, as GKE runs
it, lets its pods schedule there; the same world without the plugin leaves them Pending. Pods are created by the
controllers and by real kubectl through the API, so both paths meet the plugin.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from fixtures.sim_world import require_kubectl
from vllm_remedy.sim import kubeconfig
from vllm_remedy.sim.cluster import Cluster
from vllm_remedy.sim.seed import load_seed
from vllm_remedy.sim.server import SimServer

GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def pods(cluster: Cluster) -> list[dict]:
    return cluster.store.list("pods", "llm")[0]


def test_gke_world_admits_gpu_pods_onto_its_tainted_l4_pool(tmp_path: Path):
    cluster = Cluster("gke", speed=600)
    cluster.start()
    server = SimServer([cluster])
    try:
        cluster.apply_seed("gke", wait=True, timeout=60)
        assert cluster.rolled_out("llm", "llama-8b")
        template = cluster.store.get("deployments.apps", "llm", "llama-8b")["spec"]["template"]["spec"]
        assert "tolerations" not in template  # the manifest has none: the plugin added them
        placed = {p["spec"]["nodeName"]: p["spec"]["tolerations"] for p in pods(cluster)}
        assert sorted(placed) == ["gke-rehearsal-l4-pool-1", "gke-rehearsal-l4-pool-2"]
        assert all(t == [GPU_TOLERATION] for t in placed.values())

        server.start()
        path = kubeconfig.write(tmp_path / "kubeconfig", server.url, ["gke"])
        kubectl = [str(require_kubectl("32")), "--kubeconfig", str(path), "--context", "gke", "-n", "llm"]
        for name, limits in (("gpu", {"nvidia.com/gpu": "1"}), ("cpu", {"cpu": "1"})):
            manifest = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                        "spec": {"tolerations": [{"key": "other", "operator": "Exists"}],
                                 "containers": [{"name": "c", "image": "busybox", "resources": {"limits": limits}}]}}
            made = subprocess.run([*kubectl, "create", "-f", "-", "-o", "json"], input=json.dumps(manifest),
                                  capture_output=True, text=True, timeout=60)
            assert made.returncode == 0, made.stderr
            got = json.loads(made.stdout)["spec"]["tolerations"]
            expected = [{"key": "other", "operator": "Exists"}] + ([GPU_TOLERATION] if name == "gpu" else [])
            assert got == expected, name
    finally:
        cluster.stop()
        server.stop()


def test_the_same_world_without_the_plugin_leaves_gpu_pods_pending():
    seed, _ = load_seed("gke")
    bare = {k: v for k, v in seed.items() if k != "admission"}
    cluster = Cluster("kind", speed=600)
    cluster.start()
    try:
        cluster.apply_seed(bare, wait=False)
        assert cluster.wait_for(lambda: len(pods(cluster)) == 2 and all(
            any(c.get("reason") == "Unschedulable" for c in (p.get("status") or {}).get("conditions") or [])
            for p in pods(cluster)), 10)
        assert not any(p["spec"].get("nodeName") for p in pods(cluster))
    finally:
        cluster.stop()


def test_karpenter_world_serves_on_g5_a10g_nodes_with_eks_labels():
    cluster = Cluster("eks", speed=600)
    cluster.start()
    try:
        cluster.apply_seed("karpenter", wait=True, timeout=60)
        nodes = {n["metadata"]["name"]: n["metadata"]["labels"] for n in cluster.store.list("nodes")[0]}
        gpu = {name: labels for name, labels in nodes.items() if labels.get("karpenter.sh/nodepool") == "gpu"}
        assert len(gpu) == 2
        for labels in gpu.values():
            assert labels["node.kubernetes.io/instance-type"] == "g5.xlarge"
            assert (labels["karpenter.k8s.aws/instance-gpu-name"], labels["nvidia.com/gpu.product"]) == \
                ("a10g", "NVIDIA-A10G")
        assert any("eks.amazonaws.com/nodegroup" in labels for labels in nodes.values())
        (pool,) = cluster.store.list("nodepools.karpenter.sh")[0]  # served: its CRD is installed by the seed
        assert pool["metadata"]["name"] == "gpu" and pool["spec"]["template"]["spec"]["taints"][0]["key"] == \
            "nvidia.com/gpu"
        assert sorted(p["spec"]["nodeName"] for p in pods(cluster)) == sorted(gpu)
        assert all(p["status"]["containerStatuses"][0]["ready"] for p in pods(cluster))
    finally:
        cluster.stop()
