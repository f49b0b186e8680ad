"""The RBAC of manifests/ is what restoring a LeaderWorkerSet needs: the remediate account rolls it back through
the real pyinfra CLI over HTTPS with its token; the drift account, read-only, is refused the write, nothing changed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from fixtures.lws_world import HOST, RESTORE, inventory, read, start_set
from fixtures.manifests import DRIFT_USER, REMEDIATE_USER, all_docs, sim_rules
from fixtures.pyinfra_run import CLUSTER, Rehearsal, host_lines
from vllm_remedy.sim import kubeconfig as sim_kubeconfig
from vllm_remedy.sim.api.auth import load as load_auth
from vllm_remedy.sim.cluster import Cluster
from vllm_remedy.sim.server import SimServer
from vllm_remedy.sim.tls import ensure_cert

ADMIN = [{"verbs": ["*"], "resources": ["*"]}]


@pytest.fixture
def accounts(tmp_path: Path) -> Iterator[tuple[Rehearsal, Path, Path]]:
    """The runbook world over HTTPS: (rehearsal arranged by an admin token, drift kubeconfig, remediate kubeconfig)."""
    docs = all_docs()
    auth = load_auth({"tokens": {
        "t-admin": {"user": "admin", "rules": ADMIN},
        "t-drift": {"user": DRIFT_USER, "rules": sim_rules(docs, "llm", "vllm-remedy-drift")},
        "t-remediate": {"user": REMEDIATE_USER, "rules": sim_rules(docs, "llm", "vllm-remedy-remediate")}}})
    cluster = Cluster(CLUSTER, speed=600)
    cluster.start()
    cluster.apply_seed("runbook", wait=True, timeout=120)
    tls = ensure_cert(tmp_path / "tls")
    server = SimServer([cluster], auth=auth, tls=tls)
    server.start()
    admin, drift, remediate = (
        sim_kubeconfig.write(tmp_path / f"{user}.kubeconfig", server.url, [CLUSTER], {user: token}, user,
                             ca_pem=tls[0].read_bytes())
        for user, token in (("admin", "t-admin"), ("drift", "t-drift"), ("remediate", "t-remediate")))
    sim = Rehearsal(server, {CLUSTER: cluster}, admin, tmp_path)
    yield sim, drift, remediate
    sim.stop()


def test_the_remediate_account_restores_an_lws_and_the_drift_account_may_not(accounts, tmp_path: Path) -> None:
    sim, drift, remediate = accounts
    good = start_set(sim)
    bad = read(sim)
    refused = sim.pyinfra(inventory(tmp_path), RESTORE, "-y", env={"KUBECONFIG": str(drift)}, timeout=300)
    assert refused.returncode != 0 and "Traceback" not in refused.stderr
    forbidden = [line for line in host_lines(refused.stderr, HOST) if " is forbidden: " in line]
    # the crash record on the bad revision's ControllerRevision is forbidden too: a warning, never the failure
    [record] = [line for line in forbidden if line.startswith("warning: record on controllerrevision ")]
    assert 'cannot patch resource "controllerrevisions" in API group "apps"' in record, record
    [line] = [line for line in forbidden if line != record]
    assert 'cannot patch resource "leaderworkersets" in API group "leaderworkerset.x-k8s.io"' in line, line
    assert line.endswith("nothing was written"), line
    assert read(sim)["metadata"]["generation"] == bad["metadata"]["generation"]
    got = sim.pyinfra(inventory(tmp_path), RESTORE, "-y", env={"KUBECONFIG": str(remediate)}, timeout=300)
    assert got.returncode == 0, got.stderr
    assert read(sim)["spec"]["leaderWorkerTemplate"] == good["spec"]["leaderWorkerTemplate"]
