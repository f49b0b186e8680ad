"""Seeds: packaged lookup, node shorthand expansion, and one-line errors for bad seed files."""

from __future__ import annotations

import re
import time

import pytest

from vllm_remedy.errors import UserError
from vllm_remedy.sim.clock import Clock
from vllm_remedy.sim.cluster import Cluster
from vllm_remedy.sim.controllers.util import controlled_by
from vllm_remedy.sim.runtime import PlainRuntime
from vllm_remedy.sim.seed import cluster_seeds, load_seed, make_node, packaged_seeds, set_path

RS = "replicasets.apps"


def test_runbook_is_packaged_and_loads():
    assert "runbook" in packaged_seeds()
    seed, label = load_seed("runbook")
    assert label == "runbook.yaml"
    assert [n["gpu"]["product"] for n in seed["nodes"]].count("NVIDIA-L40S") == 3
    assert cluster_seeds(seed) == {"default": seed}
    assert sorted(cluster_seeds({"clusters": {"prod": {}, "staging": None}})) == ["prod", "staging"]


def test_node_shorthand_expands_to_gfd_labels_and_gpu_allocatable():
    node = make_node({"name": "n1", "instanceType": "g6e.xlarge",
                      "gpu": {"product": "NVIDIA-L40S", "memoryMiB": 46068, "count": 2},
                      "labels": {"karpenter.k8s.aws/instance-gpu-name": "l40s"},
                      "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]}, "x")
    labels = node["metadata"]["labels"]
    assert {k: labels[k] for k in ("nvidia.com/gpu.product", "nvidia.com/gpu.memory", "nvidia.com/gpu.count",
                                   "node.kubernetes.io/instance-type", "karpenter.k8s.aws/instance-gpu-name",
                                   "kubernetes.io/hostname")} == {
        "nvidia.com/gpu.product": "NVIDIA-L40S", "nvidia.com/gpu.memory": "46068", "nvidia.com/gpu.count": "2",
        "node.kubernetes.io/instance-type": "g6e.xlarge", "karpenter.k8s.aws/instance-gpu-name": "l40s",
        "kubernetes.io/hostname": "n1"}
    assert node["status"]["allocatable"]["nvidia.com/gpu"] == "2"
    assert node["spec"]["taints"][0]["effect"] == "NoSchedule"
    assert [c["type"] for c in node["status"]["conditions"]][-1] == "Ready"


def test_set_path_picks_list_items_by_name():
    obj = {"spec": {"containers": [{"name": "side"}, {"name": "vllm", "args": ["a"]}]}}
    set_path(obj, "spec.containers[vllm].args", ["b", "c"], "w")
    set_path(obj, "spec.containers[0].image", "busybox", "w")
    set_path(obj, "spec.nodeSelector.gpu", "L40S", "w")
    assert obj == {"spec": {"containers": [{"name": "side", "image": "busybox"}, {"name": "vllm", "args": ["b", "c"]}],
                            "nodeSelector": {"gpu": "L40S"}}}
    with pytest.raises(UserError, match=r"^w: 'spec.containers\[nope\].image': no list item named 'nope'$"):
        set_path(obj, "spec.containers[nope].image", "x", "w")


@pytest.mark.parametrize(("text", "message"), [
    ("nodes: [", r"^{path}: not valid YAML: "),
    ("- a\n- b\n", r"^{path}: expected a mapping with nodes/namespaces/deployments$"),
    ("nodes:\n  - gpu: {product: X}\n", r"^{path}: nodes\[0\].name: required, a node name$"),
    ("deployments:\n  - revisions: []\n", r"^{path}: deployments\[0\].manifest: required, a Deployment manifest$"),
    ("deployments:\n  - manifest: {metadata: {name: x, namespace: y}, spec: {}}\n    revisions:\n"
     "      - set: {'spec.template.spec.containers[vllm].image': v}\n",
     r"^{path}: deployments\[0\].revisions\[0\].set: 'spec.template.spec.containers\[vllm\].image': "
     r"no list item named 'vllm'$"),
    ("deployments:\n  - manifest: {metadata: {name: x, namespace: y}, spec: {}}\n    first-revision: 0\n",
     r"^{path}: deployments\[0\].first-revision: expected a whole number >= 1, got 0$"),
    ("deployments:\n  - manifest: {metadata: {name: x, namespace: y}, spec: {}}\n    first-revision: '3'\n",
     r"^{path}: deployments\[0\].first-revision: expected a whole number >= 1, got '3'$"),
])
def test_bad_seed_files_raise_one_line_user_errors(tmp_path, text, message):
    path = tmp_path / "seed.yaml"
    path.write_text(text)
    cluster = Cluster("t", clock=Clock(speed=600))
    with pytest.raises(UserError) as err:
        cluster.apply_seed(path, wait=False)
    assert re.match(message.format(path=re.escape(str(path))), str(err.value))
    assert "\n" not in str(err.value)


def test_unknown_seed_name_lists_the_packaged_ones():
    with pytest.raises(UserError, match=r"^seed 'nope': no such file or packaged seed \(have: .*runbook"):
        load_seed("nope")


def history_seed(images: list[str], **entry: object) -> dict:
    """One node, one Deployment whose listed revisions only change the image."""
    manifest = {"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "web", "namespace": "app", "labels": {"app": "web"}},
                "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                         "template": {"metadata": {"labels": {"app": "web"}},
                                      "spec": {"containers": [{"name": "web", "image": "busybox"}]}}}}
    manifest["spec"].update(entry.pop("spec", {}))  # type: ignore[call-overload]
    return {"namespaces": ["app"], "nodes": [{"name": "n1"}],
            "deployments": [{"manifest": manifest, **entry, "revisions": [
                {"change-cause": f"image {image}", "set": {"spec.template.spec.containers[web].image": image}}
                for image in images]}]}


def seeded(seed: dict) -> tuple[Cluster, dict[int, dict]]:
    cluster = Cluster("t", clock=Clock(speed=600), runtime=PlainRuntime())
    cluster.start()
    cluster.apply_seed(seed, timeout=10)
    uid = cluster.store.get("deployments.apps", "app", "web")["metadata"]["uid"]
    assert cluster.wait_for(lambda: all(controlled_by(rs, uid) for rs in cluster.store.list(RS, "app")[0]), 2)
    revs = {int(rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"]): rs
            for rs in cluster.store.list(RS, "app")[0]}
    return cluster, revs


def test_seeded_history_keeps_revision_history_limit():
    cluster, _ = seeded(history_seed(["busybox:1", "busybox:2", "busybox:3", "busybox:4"],
                                     spec={"revisionHistoryLimit": 1}, **{"first-revision": 7}))
    try:
        assert cluster.wait_for(lambda: len(cluster.store.list(RS, "app")[0]) == 2, 3)
        revs = {int(rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"]): rs
                for rs in cluster.store.list(RS, "app")[0]}
        assert sorted(revs) == [9, 10]
        assert [revs[r]["spec"]["template"]["spec"]["containers"][0]["image"] for r in (9, 10)] == [
            "busybox:3", "busybox:4"]
        assert (revs[9]["spec"]["replicas"], revs[10]["spec"]["replicas"]) == (0, 1)
        d = cluster.store.get("deployments.apps", "app", "web")
        assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "10"
    finally:
        cluster.stop()


def test_seeded_history_reuses_a_repeated_template_like_a_rollback():
    cluster, revs = seeded(history_seed(["busybox:1", "busybox:2", "busybox:1", "busybox:3"]))
    try:
        assert sorted(revs) == [2, 3, 4]
        assert revs[3]["spec"]["template"]["spec"]["containers"][0]["image"] == "busybox:1"
        notes = revs[3]["metadata"]["annotations"]
        assert (notes["deployment.kubernetes.io/revision-history"], notes["kubernetes.io/change-cause"]) == (
            "1", "image busybox:1")
        assert [revs[r]["spec"]["replicas"] for r in (2, 3, 4)] == [0, 0, 1]
    finally:
        cluster.stop()


def test_seeded_revisions_images_are_on_the_nodes_they_could_run_on():
    """The runbook's world has been running llama-8b on the L40S pool: those nodes hold its three images (so the
    seed's rollout and a rollback pull nothing); the tainted L4 pool and the A10G node, never a fit, hold none."""
    cluster = Cluster("t", clock=Clock(speed=600), runtime=PlainRuntime())
    cluster.start()
    try:
        cluster.apply_seed("runbook", timeout=10)
        nodes = cluster.store.list("nodes")[0]
        held = {n["metadata"]["name"]: sorted(e["names"][1] for e in n["status"]["images"]) for n in nodes}
        for node in nodes:  # listed as the kubelet lists them, largest first, whatever order they were pulled in
            sizes = [int(e["sizeBytes"]) for e in node["status"]["images"]]
            assert sizes == sorted(sizes, reverse=True), node["metadata"]["name"]
        tags = [f"docker.io/vllm/vllm-openai:{t}" for t in ("v0.6.6", "v0.7.3", "v0.8.5")]
        # every GPU node runs the GPU operator's DCGM exporter, so each holds that image once it started there
        dcgm = ["nvcr.io/nvidia/k8s/dcgm-exporter:4.5.3-4.8.2-ubuntu22.04"]
        assert held == {"gpu-l40s-1": tags + dcgm, "gpu-l40s-2": tags + dcgm, "gpu-l40s-3": tags + dcgm,
                        "gpu-a10g-1": dcgm, "gke-l4-pool-1": dcgm, "gke-l4-pool-2": dcgm}
        pulled = [e for e in cluster.store.list("events", "llm")[0] if e["reason"] in ("Pulling", "Pulled")]
        assert pulled and all("already present on machine" in e["message"] for e in pulled)
    finally:
        cluster.stop()


def test_a_seed_extends_a_packaged_one_key_by_key_one_level_only(tmp_path):
    seed, _ = load_seed("runbook-statefulset")
    assert seed["nodes"] == load_seed("runbook")[0]["nodes"] and seed["deployments"] == []
    assert [o["object"]["metadata"]["name"] for o in seed["objects"]] == ["llama-sts"]
    packaged = "gke, karpenter, kserve, runbook, runbook-statefulset"
    for body, why in (("extends: nope\n", f"is not a packaged seed (have: {packaged}"),
                      ("extends: runbook-statefulset\n", "extends another seed itself (one level only)")):
        path = tmp_path / "s.yaml"
        path.write_text(body)
        with pytest.raises(UserError) as err:
            load_seed(str(path))
        assert str(err.value).startswith(f"{path}: extends: ") and why in str(err.value), err.value


def test_a_deleted_pods_copied_files_are_dropped_with_it():
    """`kubectl cp` puts files in the cluster's memory; they go when the pod goes (a review saw 1.26 GB stay)."""
    cluster = Cluster("t", clock=Clock(speed=600), runtime=PlainRuntime())
    cluster.start()
    try:
        cluster.apply_seed("runbook", timeout=10)
        pod = cluster.store.list("pods", "llm")[0][0]
        cluster.files.of(pod, "vllm", "host")
        other = cluster.store.list("pods", "llm")[0][1]
        cluster.files.of(other, "vllm", "host")
        assert cluster.files.held() == 2
        cluster.store.delete("pods", "llm", pod["metadata"]["name"])
        deadline = time.monotonic() + 20
        while cluster.files.held() != 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert cluster.files.held() == 1  # the other pod's files stay
    finally:
        cluster.stop()
