"""The read-only token from manifests/rbac-drift.yaml on the rehearsal cluster (HTTPS + bearer tokens): `drift`
runs with it and sends only reads (counted server-side); a write attempted with it is a 403 and changes nothing."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from fixtures.drift_world import BUDGET, HOST, MODEL, CountingServer, as_json, inventory, policy
from fixtures.manifests import DRIFT_USER, REMEDIATE_USER, all_docs, sim_rules
from fixtures.pyinfra_run import ROOT, host_lines, run_pyinfra
from vllm_remedy.kube.annotations import parse_rfc3339
from vllm_remedy.kube.client import KubeClient
from vllm_remedy.kube.patch import apply_deployment_patch, json_patch
from vllm_remedy.sim.api.auth import load as load_auth
from vllm_remedy.sim.cluster import Cluster
from vllm_remedy.sim.tls import ensure_cert


@dataclass
class Secured:
    server: CountingServer
    cluster: Cluster
    kubeconfig: Path


def start_secured(tmp_path: Path) -> Secured:
    """The runbook world over HTTPS, with an admin token and the drift token exactly as rbac-drift.yaml grants."""
    cluster = Cluster("rehearsal", speed=600)
    cluster.start()
    cluster.apply_seed("runbook", wait=True, timeout=120)
    auth = load_auth({"tokens": {
        "t-admin": {"user": "admin", "rules": [{"verbs": "*", "resources": "*"}]},
        "t-drift": {"user": DRIFT_USER, "rules": sim_rules(all_docs(), "llm", "vllm-remedy-drift")},
        "t-remediate": {"user": REMEDIATE_USER, "rules": sim_rules(all_docs(), "llm", "vllm-remedy-remediate")}}})
    server = CountingServer([cluster], auth=auth, tls=ensure_cert(tmp_path / "tls"))
    server.start()
    kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig", {"admin": "t-admin", "drift": "t-drift",
                                                                     "remediate": "t-remediate"}, "admin")
    return Secured(server, cluster, kubeconfig)


@pytest.fixture
def secured(tmp_path: Path) -> Iterator[Secured]:
    s = start_secured(tmp_path)
    yield s
    s.cluster.stop()
    s.server.stop()


def test_drift_token_exactly_as_the_manifests_grant_it(secured: Secured, tmp_path: Path, cli) -> None:
    inv = inventory(tmp_path, secured.kubeconfig, policy(tmp_path), context="rehearsal-drift")
    got = cli("drift", "-i", inv, "-o", "json")
    assert got.returncode == 0, got.stderr


def test_drift_token_checks_and_never_writes(secured: Secured, tmp_path: Path, cli) -> None:
    admin = KubeClient.for_context("rehearsal", str(secured.kubeconfig))
    current = admin.get_deployment("llm", "llama-8b")
    wanted = {**current, "spec": {**current["spec"]}}
    wanted["spec"]["template"] = {**current["spec"]["template"]}
    spec = wanted["spec"]["template"]["spec"] = {**current["spec"]["template"]["spec"]}
    spec["containers"] = [{**spec["containers"][0], "args": [MODEL, "--gpu-memory-utilization", "0.90"]}]
    apply_deployment_patch(admin, "llm", "llama-8b", json_patch(current, wanted))
    before = admin.get_deployment("llm", "llama-8b")
    inv = inventory(tmp_path, secured.kubeconfig, policy(tmp_path), context="rehearsal-drift")

    secured.server.seen.clear()
    got = cli("drift", "-i", inv, "-o", "json")
    assert got.returncode == 1, got.stderr
    host = as_json(got)["hosts"][0]
    assert host["drifted"] == ["max-model-len", "known-good-unit", "concurrency"]
    assert any(op["changes"] for op in host["fix"]["operations"])  # a fix was planned ...
    methods = {method for method, _path in secured.server.seen}
    assert methods == {"GET"}  # ... with reads only

    secured.server.seen.clear()
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    deploy = run_pyinfra(inv, BUDGET, "-y", cwd=tmp_path, env={**env, "HOME": str(tmp_path), "NO_COLOR": "1",
                                                                "PYINFRA_PROGRESS": "off"})
    assert deploy.returncode == 1
    forbidden = (f'deployments.apps "llama-8b" is forbidden: User "{DRIFT_USER}" cannot patch resource '
                 '"deployments" in API group "apps" in the namespace "llm"')
    assert any(forbidden in line for line in host_lines(deploy.stderr, HOST)), deploy.stderr
    assert [m for m, _p in secured.server.seen if m != "GET"] == ["PATCH"]  # the one attempt, refused with 403
    after = admin.get_deployment("llm", "llama-8b")
    assert (after["spec"]["template"], after["metadata"]["generation"]) == (before["spec"]["template"],
                                                                           before["metadata"]["generation"])


def test_remediate_token_can_confirm_and_mark_the_replicaset(secured: Secured, tmp_path: Path) -> None:
    """deploys/confirm.py in-cluster: reads /metrics through pods/proxy and patches the revision's ReplicaSet."""
    admin = KubeClient.for_context("rehearsal", str(secured.kubeconfig))
    clock = secured.cluster.clock

    def stable() -> bool:  # Ready for longer than the policy's stable_for (30 cluster minutes)
        pods = admin.list_pods("llm", "app=llama-8b")
        since = [c["lastTransitionTime"] for p in pods for c in p["status"]["conditions"] if c["type"] == "Ready"]
        return len(since) == 2 and all(clock.now() - parse_rfc3339(t) > 31 * 60 for t in since)

    deadline = time.monotonic() + 30
    while not stable() and time.monotonic() < deadline:
        time.sleep(0.1)
    inv = inventory(tmp_path, secured.kubeconfig, policy(tmp_path), context="rehearsal-remediate")
    got = run_pyinfra(inv, str(ROOT / "deploys" / "confirm.py"), "-y", cwd=tmp_path,
                      env={**os.environ, "HOME": str(tmp_path), "PYINFRA_PROGRESS": "off", "NO_COLOR": "1"})
    assert got.returncode == 0, got.stderr
    marked = [rs for rs in admin.list_replicasets("llm", "app=llama-8b")
              if "vllm-remedy.io/known-good" in (rs["metadata"].get("annotations") or {})]
    assert [rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"] for rs in marked] == ["14"]
