"""The read snapshot against the rehearsal API server (real HTTP, requests counted server-side): what a host asks
for is what a GET would answer, from one list per namespace; RBAC without ``list`` falls back to the exact GET;
writes never leave the process."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fixtures.fleet_world import CountingServer, start_fleet
from vllm_remedy.connectors.scope import Scope, json_line
from vllm_remedy.connectors.verbs import run_verb
from vllm_remedy.kube.client import KubeClient
from vllm_remedy.kube.errors import KubeError, NotFoundError
from vllm_remedy.kube.snapshot import Snapshot
from vllm_remedy.sim.api.auth import load as load_auth


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[CountingServer, Path]]:
    fleet = start_fleet(tmp_path, clusters=1, namespaces=1, deployments=3, crash_every=3)  # vllm-002 crash-loops
    yield fleet.server, fleet.kubeconfig
    fleet.server.stop()


def test_each_host_gets_what_a_get_would_answer_from_one_list(server: tuple[CountingServer, Path]) -> None:
    counting, kubeconfig = server
    direct = KubeClient.for_context("c0", str(kubeconfig))
    snap = Snapshot(KubeClient.for_context("c0", str(kubeconfig)))
    for name in ("vllm-000", "vllm-001", "vllm-002"):
        assert snap.get_deployment("llm", name) == direct.get_deployment("llm", name)
        selector = f"app={name},pod-template-hash=h1"
        assert snap.list_pods("llm", selector) == direct.list_pods("llm", selector)
        assert snap.list_replicasets("llm", f"app={name}") == direct.list_replicasets("llm", f"app={name}")
    with pytest.raises(NotFoundError) as real:
        direct.get_deployment("llm", "gone")
    with pytest.raises(NotFoundError) as got:
        snap.get_deployment("llm", "gone")
    assert got.value.body["message"] == real.value.body["message"] == 'deployments.apps "gone" not found'
    assert snap.server_time() == snap.server_time()
    counting.seen.clear()
    snap.get_deployment("llm", "vllm-000")["metadata"]["name"] = "changed"  # a host's own copy
    assert snap.get_deployment("llm", "vllm-000")["metadata"]["name"] == "vllm-000"
    assert not counting.seen  # all answered from the snapshot
    with pytest.raises(KubeError, match="refused: this run only reads"):
        snap.patch_deployment("llm", "vllm-000", [])
    assert not counting.seen  # a write never leaves the process


def test_without_list_rights_each_object_is_read_once_by_get(tmp_path: Path) -> None:
    auth = load_auth({"tokens": {"t-get": {"user": "getter", "rules": [{"verbs": ["get"], "resources": ["*"]}]}}})
    counting = start_fleet(tmp_path, clusters=1, namespaces=1, deployments=2, auth=auth).server
    try:
        kubeconfig = counting.write_kubeconfig(tmp_path / "kc", {"getter": "t-get"}, "getter")
        snap = Snapshot(KubeClient.for_context("c0", str(kubeconfig)))
        for _ in range(3):
            assert snap.get_deployment("llm", "vllm-001")["metadata"]["name"] == "vllm-001"
    finally:
        counting.stop()
    assert counting.by_path() == {("GET", "/apis/apps/v1/namespaces/llm/deployments"): 1,  # 403
                                  ("GET", "/apis/apps/v1/namespaces/llm/deployments/*"): 1}


def _beatless(lines: list[str]) -> list[str]:
    """The lines without node heartbeats and the resourceVersions they move: the kubelets of the fleet server keep
    beating, so a live read a moment after the snapshot may carry a later one (a loaded run caught it)."""
    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in ("lastHeartbeatTime", "resourceVersion")}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value
    return [json.dumps(strip(json.loads(line)), sort_keys=True) for line in lines]


def test_the_verbs_answer_the_same_through_the_snapshot(server: tuple[CountingServer, Path]) -> None:
    """Every verb a drift check sends answers byte for byte what it answers on a live client (k8s-nodes builds its
    cluster-wide part once per run), and each answer is the canonical JSON line."""
    _counting, kubeconfig = server
    live = KubeClient.for_context("c0", str(kubeconfig))
    snap = Snapshot(KubeClient.for_context("c0", str(kubeconfig)))
    for name in ("vllm-000", "vllm-002"):
        for command in ("k8s-deployment", "k8s-history", "k8s-pods --logs crashed", "k8s-nodes", "k8s-events",
                        "k8s-get replicasets", "k8s-get pods"):
            said = run_verb(Scope(snap, "llm", name, "vllm-remedy.io/", "vllm"), command)
            now = run_verb(Scope(live, "llm", name, "vllm-remedy.io/", "vllm"), command)
            assert _beatless(said) == _beatless(now), command
            assert said == [json_line(json.loads(line)) for line in said], command
