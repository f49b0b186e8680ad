"""Seeds: packaged lookup, node shorthand expansion, and one-line errors for bad seed files."""

from __future__ import annotations

import re

import pytest

from vllm_remedy.errors import UserError
from vllm_remedy.sim.clock import Clock
from vllm_remedy.sim.cluster import Cluster
from vllm_remedy.sim.seed import cluster_seeds, load_seed, make_node, packaged_seeds, set_path


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
