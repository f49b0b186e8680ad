"""The rehearsal cluster's LeaderWorkerSets as real kubectl 1.32 sees them: served only once the CRD is installed,
groups of a leader and workers with upstream's names and labels, ControllerRevisions, a group-wise rolling update,
and a vLLM leader that serves only because TP × PP splits the model over the group."""

from __future__ import annotations

import json

import pytest

from fixtures import sim_world
from fixtures.lws_world import BAD_ARGS, LWS_KEY, install_crd, plain_lws, vllm_lws
from fixtures.sim_world import Sim
from vllm_remedy.kube.health import pod_health
from vllm_remedy.kube.wait import crashing_container
from vllm_remedy.sim.store import ApiError
from vllm_remedy.sim.vllm_pod.reality import EXACT

live_sim = sim_world.live_sim
V = "32"
PREFIX = "leaderworkerset.sigs.k8s.io/"


@pytest.fixture(autouse=True)
def _need_kubectl() -> None:
    sim_world.require_kubectl(V)


def ok(got) -> str:
    assert got.returncode == 0, got.stderr
    return got.stdout


def live_pods(sim: Sim) -> dict[str, dict[str, str]]:
    items = sim.clusters["a"].store.list("pods", "llm")[0]
    return {p["metadata"]["name"]: p["metadata"]["labels"] for p in items if not p["metadata"].get("deletionTimestamp")}


def settled(sim: Sim, name: str, replicas: int, size: int) -> dict:
    """Wait until the controller has acted on the set's latest spec (``status.observedGeneration``, as a real
    client checks it) and every group is ready and updated; the set then. Without the generation, the status
    written before a patch (every group ready and updated, on the old template) reads as settled."""
    store = sim.clusters["a"].store

    def done() -> bool:
        lws = store.get(LWS_KEY, "llm", name)
        st = lws.get("status") or {}
        return int(st.get("observedGeneration") or 0) >= int(lws["metadata"]["generation"]) and \
            st.get("readyReplicas") == st.get("updatedReplicas") == replicas and len(live_pods(sim)) == replicas * size
    assert sim.clusters["a"].wait_for(done, 10), store.get(LWS_KEY, "llm", name).get("status")
    return store.get(LWS_KEY, "llm", name)


def test_the_kind_is_served_only_once_its_crd_is_installed(live_sim: Sim) -> None:
    before = live_sim.kubectl(V, "-n", "llm", "get", "lws")
    assert before.returncode != 0
    assert 'the server doesn\'t have a resource type "lws"' in before.stderr
    install_crd(live_sim.clusters["a"])
    assert ok(live_sim.kubectl(V, "-n", "llm", "get", "lws")) == ""  # "No resources found" goes to stderr
    assert ok(live_sim.kubectl(V, "-n", "llm", "apply", "-f", "-", stdin=json.dumps(plain_lws()))).strip() == \
        "leaderworkerset.leaderworkerset.x-k8s.io/web created"


def test_groups_revisions_and_a_rolling_update(live_sim: Sim) -> None:
    install_crd(live_sim.clusters["a"])
    ok(live_sim.kubectl(V, "-n", "llm", "apply", "-f", "-", stdin=json.dumps(plain_lws())))
    first = settled(live_sim, "web", 2, 3)
    pods = live_pods(live_sim)
    assert sorted(pods) == ["web-0", "web-0-1", "web-0-2", "web-1", "web-1-1", "web-1-2"]
    assert {k: pods["web-1-2"][PREFIX + k] for k in ("name", "group-index", "worker-index")} == \
        {"name": "web", "group-index": "1", "worker-index": "2"}
    old = pods["web-0"][PREFIX + "template-revision-hash"]
    assert first["spec"]["rolloutStrategy"]["rollingUpdateConfiguration"]["maxUnavailable"] == 1
    patch = {"spec": {"leaderWorkerTemplate": {"workerTemplate": {"spec": {"containers": [
        {"name": "web", "image": "nginx:1.28"}]}}}}}
    ok(live_sim.kubectl(V, "-n", "llm", "patch", "lws", "web", "--type", "merge", "-p", json.dumps(patch)))
    second = settled(live_sim, "web", 2, 3)
    assert (second["status"]["observedGeneration"], {c["observedGeneration"] for c in second["status"]["conditions"]}) \
        == (2, {2})
    new = {labels[PREFIX + "template-revision-hash"] for labels in live_pods(live_sim).values()}
    assert len(new) == 1 and old not in new
    revisions = live_sim.clusters["a"].store.list("controllerrevisions.apps", "llm")[0]
    assert sorted((r["revision"], r["metadata"]["labels"][PREFIX + "template-revision-hash"]) for r in revisions) \
        == [(1, old), (2, new.pop())]


def test_a_vllm_leader_serves_across_the_group_and_crash_loops_when_its_kv_cache_does_not_fit(live_sim: Sim) -> None:
    cluster = live_sim.clusters["a"]
    cluster.set_reality(EXACT)  # the log's figures are compared with the memory model's own, number for number
    install_crd(cluster)
    ok(live_sim.kubectl(V, "-n", "llm", "apply", "-f", "-", stdin=json.dumps(vllm_lws())))
    settled(live_sim, "qwen-lws", 1, 2)  # half of the 32B distill per L40S: fits only split TP x PP = 2 ways
    patch = [{"op": "replace", "path": "/spec/leaderWorkerTemplate/leaderTemplate/spec/containers/0/args",
              "value": BAD_ARGS}]
    ok(live_sim.kubectl(V, "-n", "llm", "patch", "lws", "qwen-lws", "--type", "json", "-p", json.dumps(patch)))

    def crash_logged() -> bool:
        pod = cluster.store.find("pods", "llm", "qwen-lws-0")
        if pod is None or "131072" not in json.dumps(pod["spec"]) or crashing_container(pod_health(pod), 3) is None:
            return False
        try:
            return "max seq len (131072), (16.00 GiB KV cache is needed, which is larger than the available KV " \
                "cache memory (5.75 GiB)" in cluster.read_log("llm", "qwen-lws-0", previous=True)
        except ApiError:  # the kubelet records the previous container a moment after the status says so
            return False
    assert cluster.wait_for(crash_logged, 20)
    status = cluster.store.get(LWS_KEY, "llm", "qwen-lws")["status"]
    assert (status["readyReplicas"], status["updatedReplicas"]) == (0, 1)
