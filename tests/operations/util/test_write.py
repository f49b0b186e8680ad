"""The shared operation plumbing, pure parts: material comparison, basis choice, prediction, flag edits,
annotation patches and the cluster clock (no pyinfra run, no cluster)."""

from __future__ import annotations

import copy
import functools
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from fixtures.kube_fakeapi import FakeApi, kubeconfig_text
from vllm_remedy.kube.annotations import Keys
from vllm_remedy.kube.client import KubeClient
from vllm_remedy.kube.clock import ClusterClock
from vllm_remedy.kube.patch import apply_ops
from vllm_remedy.operations.util import (
    Change,
    basis_for,
    change_ops,
    forget,
    material,
    observe,
    run_write,
    with_flags,
)
from vllm_remedy.remedies.predict import pinned_gpu, predict_template

KEYS = Keys("vllm-remedy.io/")

TEMPLATE: dict[str, Any] = {
    "metadata": {"labels": {"app": "llama-8b"}},
    "spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"},
             "containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.8.5", "command": ["vllm", "serve"],
                             "args": ["meta-llama/Llama-3.1-8B-Instruct", "--max-model-len", "16384",
                                      "--gpu-memory-utilization", "0.90", "--max-num-seqs", "64"]}]},
}


def deployment(rv: str = "10", **notes: str) -> dict[str, Any]:
    return {"metadata": {"name": "llama-8b", "namespace": "llm", "resourceVersion": rv, "generation": 3,
                         "annotations": {"deployment.kubernetes.io/revision": "3", **notes}},
            "spec": {"replicas": 2, "template": copy.deepcopy(TEMPLATE)}, "status": {"observedGeneration": 3}}


def fake_run(executing: bool) -> tuple[Any, Any]:
    state = SimpleNamespace(is_executing=executing)
    host = SimpleNamespace(name="@k8s/x/llm/llama-8b", state=state)
    return state, host


def test_material_ignores_status_bookkeeping_and_the_controllers_revision() -> None:
    a = deployment("10")
    b = deployment("11")
    b["status"] = {"observedGeneration": 4, "readyReplicas": 2}
    b["metadata"]["generation"] = 4
    b["metadata"]["annotations"]["deployment.kubernetes.io/revision"] = "4"
    assert material(a) == material(b)
    b["metadata"]["annotations"]["oncall"] = "me"
    assert material(a) != material(b)


def test_basis_is_what_detection_saw_when_someone_edited_since() -> None:
    state, host = fake_run(executing=False)
    seen = deployment("10")
    observe(state, host, "/d", seen)
    state.is_executing = True
    status_only = deployment("12")
    status_only["status"] = {"observedGeneration": 3, "replicas": 2}
    assert basis_for(state, host, "/d", status_only) is status_only  # status moved: plan on the fresh object
    edited = deployment("13", owner="someone-else")
    assert basis_for(state, host, "/d", edited)["metadata"]["resourceVersion"] == "10"  # the server will refuse
    forget(host.state)


@pytest.fixture
def api(tmp_path: Path) -> Iterator[tuple[FakeApi, KubeClient]]:
    """A fake API server (HTTP on loopback, JSON patches applied by jsonpatch) holding the Deployment."""
    fake = FakeApi()
    config = tmp_path / "config"
    config.write_text(kubeconfig_text(fake.start()))
    fake.add("deployments", deployment("10"))
    yield fake, KubeClient.for_context(kubeconfig=str(config))
    fake.stop()


def test_basis_after_our_own_write_is_our_answer(api: tuple[FakeApi, KubeClient]) -> None:
    """run_write remembers what its PATCH answered: later in the run our own write is not someone else's edit
    (plan on the fresh object), while an edit landing after it still is (the write is tested against ours)."""
    fake, client = api
    state, host = fake_run(executing=True)
    host.print_prefix = ""
    host.connector = SimpleNamespace(client=client, scope=SimpleNamespace(namespace="llm", deployment="llama-8b",
                                                                          container=None))
    path = KubeClient.object_path("llm", "deployments", "llama-8b")
    observe(state, host, path, client.request("GET", path))  # the run's first read
    mark = functools.partial(change_ops, Change(annotations={"mine": "yes"}), KEYS)
    assert run_write(state, host, path, mark, "mark it")
    ours = client.request("GET", path)
    assert ours["metadata"]["annotations"]["mine"] == "yes"
    assert basis_for(state, host, path, ours) is ours
    fake.objects[("deployments", "llm", "llama-8b")]["metadata"]["annotations"]["oncall"] = "me"  # a colleague
    edited = client.request("GET", path)
    assert basis_for(state, host, path, edited)["metadata"]["resourceVersion"] == ours["metadata"]["resourceVersion"]
    forget(host.state)


def test_annotation_changes_are_guarded_and_apply_exactly() -> None:
    basis = deployment("10", keep="1", drop="2")
    ops = change_ops(Change(annotations={"drop": None, "new": "3"}), KEYS, None, basis, 0.0)  # type: ignore[arg-type]
    assert ops[0] == {"op": "test", "path": "/metadata/resourceVersion", "value": "10"}
    after = apply_ops(basis, ops)
    assert after["metadata"]["annotations"] == {"deployment.kubernetes.io/revision": "3", "keep": "1", "new": "3"}
    assert change_ops(Change(annotations={"keep": "1"}), KEYS, None, basis, 0.0) == []  # type: ignore[arg-type]


def test_one_builder_replaces_spec_fields_and_audits_only_with_a_change() -> None:
    basis = deployment("10")
    template = with_flags(TEMPLATE, {"max-num-seqs": "32"})
    change = Change(spec={"template": template, "strategy": {"type": "Recreate"}}, audit=("budget", "why"))
    after = apply_ops(basis, change_ops(change, KEYS, None, basis, 1_700_000_000.0))  # type: ignore[arg-type]
    assert after["spec"]["template"] == template and after["spec"]["strategy"] == {"type": "Recreate"}
    assert after["spec"]["replicas"] == 2  # fields the change does not name stay as they are
    notes = after["metadata"]["annotations"]
    assert notes["vllm-remedy.io/last-action"] == "budget" and notes["kubernetes.io/change-cause"]
    assert change_ops(change, KEYS, None, after, 1_700_000_100.0) == []  # type: ignore[arg-type]


def test_stamped_annotations_count_from_the_write_and_are_done_once_present() -> None:
    basis = deployment("10")
    change = Change(stamp=lambda at: {"vllm-remedy.io/until": str(int(at) + 60)})
    after = apply_ops(basis, change_ops(change, KEYS, None, basis, 100.0))  # type: ignore[arg-type]
    assert after["metadata"]["annotations"]["vllm-remedy.io/until"] == "160"
    assert change_ops(change, KEYS, None, after, 500.0) == []  # type: ignore[arg-type]


def test_with_flags_edits_only_the_vllm_argv() -> None:
    new = with_flags(TEMPLATE, {"max-num-seqs": "32", "max-model-len": "8192"})
    assert new["spec"]["containers"][0]["args"] == ["meta-llama/Llama-3.1-8B-Instruct", "--max-model-len", "8192",
                                                    "--gpu-memory-utilization", "0.90", "--max-num-seqs", "32"]
    assert TEMPLATE["spec"]["containers"][0]["args"][2] == "16384"  # input untouched
    assert new["spec"]["nodeSelector"] == TEMPLATE["spec"]["nodeSelector"]


def test_prediction_of_the_runbook_revisions() -> None:
    good = predict_template(TEMPLATE)
    assert good.line() == ("prediction on NVIDIA-L40S: fits — KV cache 197,840 tokens, maximum concurrency 12.08x "
                           "at max-model-len 16384")
    bad = copy.deepcopy(TEMPLATE)
    bad["spec"]["nodeSelector"] = {"cloud.google.com/gke-accelerator": "nvidia-l4"}
    bad["spec"]["containers"][0]["args"] = ["meta-llama/Llama-3.1-8B-Instruct", "--max-num-seqs", "64"]
    got = predict_template(bad)
    assert (got.gpu, got.outcome) == ("NVIDIA-L4", "max_len_exceeds_kv")
    assert got.estimate is not None and got.estimate.kv_cache_tokens == 32240


def test_prediction_without_a_pinned_gpu_says_why() -> None:
    free = copy.deepcopy(TEMPLATE)
    del free["spec"]["nodeSelector"]
    assert predict_template(free).line() == ("no prediction: the template pins no GPU product, so the card "
                                             "is the scheduler's choice")


def test_pinned_gpu_from_affinity_takes_the_smallest_card() -> None:
    spec = {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "In",
                               "values": ["NVIDIA-L40S", "NVIDIA-L4"]}]}]}}}}
    assert pinned_gpu(spec) == "NVIDIA-L4"


def test_pinned_gpu_between_cards_of_one_size_takes_the_first_listed() -> None:
    """L40 and L40S show torch the same 44.42 GiB: the affinity's order decides, not the alphabet."""
    def spec(*values: str) -> dict:
        return {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": "nvidia.com/gpu.product", "operator": "In", "values": list(values)}]}]}}}}
    assert pinned_gpu(spec("NVIDIA-L40S", "NVIDIA-L40")) == "NVIDIA-L40S"
    assert pinned_gpu(spec("NVIDIA-L40", "NVIDIA-L40S")) == "NVIDIA-L40"
    assert pinned_gpu({"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-A10G"}, **spec("NVIDIA-L4")}) == "NVIDIA-A10G"


class FakeServer:
    """Stands in for the API server's Date header (not our code): 600 cluster seconds per real second."""

    def __init__(self) -> None:
        self.real = 0.0

    def server_time(self) -> float:
        return 1_000_000.0 + self.real * 600


@pytest.mark.parametrize("asked,expected_real", [(600.0, 1.0), (2.0, 0.05)])
def test_cluster_clock_learns_the_speed_and_sleeps_real_time(asked: float, expected_real: float) -> None:
    server = FakeServer()
    slept: list[float] = []
    clock = ClusterClock(server, real=lambda: server.real, sleep=slept.append)  # type: ignore[arg-type]
    assert clock.now() == 1_000_000.0
    server.real = 1.0
    assert clock.now() == 1_000_600.0
    assert clock.speed == 600.0
    clock.sleep(asked)
    assert slept == [pytest.approx(expected_real)]


def test_cluster_clock_sleeps_only_short_slices_until_it_knows_the_speed() -> None:
    """Assuming 1.0 before measuring made the first 2 s poll of a 600x cluster last 20 cluster minutes."""
    server = FakeServer()
    slept: list[float] = []
    clock = ClusterClock(server, real=lambda: server.real, sleep=slept.append)  # type: ignore[arg-type]
    clock.now()
    clock.sleep(2.0)
    clock.sleep(0.01)
    assert slept == [0.05, 0.01]
