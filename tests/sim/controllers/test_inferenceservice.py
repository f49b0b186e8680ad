"""The rehearsal cluster's KServe (raw deployment mode) as real kubectl 1.32 sees it: the CRD is served only where
the world installs it, the predictor runs as an owned Deployment built from the runtime plus ``model.args``, and
the predictor's revisions say which one last became ready while a new one crash-loops."""

from __future__ import annotations

import json

import pytest

from fixtures import kserve_world as kw
from fixtures import sim_world
from fixtures.sim_world import Sim
from fixtures.sts_world import ok
from vllm_remedy.errors import UserError
from vllm_remedy.sim.cluster import Cluster

live_sim = sim_world.live_sim
V = "32"


@pytest.fixture(autouse=True)
def _need_kubectl() -> None:
    sim_world.require_kubectl(V)


def test_without_the_crd_kubectl_knows_no_inferenceservice(live_sim: Sim) -> None:
    got = live_sim.kubectl(V, "-n", "llm", "get", "isvc")
    assert got.returncode != 0
    assert 'the server doesn\'t have a resource type "isvc"' in got.stderr


def test_the_predictor_runs_as_an_owned_deployment_and_its_revisions_track_readiness(live_sim: Sim) -> None:
    cluster = live_sim.clusters["a"]
    kw.install(cluster)
    ok(live_sim.kubectl(V, "apply", "-f", "-", stdin=json.dumps(kw.isvc())))
    assert cluster.wait_for(lambda: kw.ready(cluster), 30), kw.status(cluster)
    deployment = json.loads(ok(live_sim.kubectl(V, "-n", "llm", "get", "deploy", "llama-predictor", "-o", "json")))
    [owner] = deployment["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("InferenceService", "llama", True)
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    assert (container["name"], container["command"], container["args"]) == ("kserve-container", ["vllm", "serve"],
                                                                          kw.GOOD)
    assert kw.predictor(cluster)["latestReadyRevision"] == "llama-predictor-00001"

    patch = {"spec": {"predictor": {"canaryTrafficPercent": 10, "model": {"args": kw.BAD}}}}
    ok(live_sim.kubectl(V, "-n", "llm", "patch", "isvc", "llama", "--type", "merge", "-p", json.dumps(patch)))

    def crash_looping() -> bool:
        pods = cluster.store.list("pods", "llm")[0]
        return any(s.get("restartCount", 0) >= 2 for p in pods for s in p["status"].get("containerStatuses") or [])
    assert cluster.wait_for(crash_looping, 30)
    got = kw.predictor(cluster)
    assert (got["latestCreatedRevision"], got["latestReadyRevision"]) == ("llama-predictor-00002",
                                                                          "llama-predictor-00001")
    assert not kw.ready(cluster)
    # raw deployment mode has one Deployment behind one Service: a canary percentage cannot be honoured
    assert got["traffic"] == [{"revisionName": "llama-predictor-00002", "percent": 100, "latestRevision": True}]
    # the controller owns its Deployment: an edit to it is put back
    ok(live_sim.kubectl(V, "-n", "llm", "scale", "deploy", "llama-predictor", "--replicas", "3"))
    assert cluster.wait_for(lambda: cluster.store.get("deployments.apps", "llm", "llama-predictor")["spec"][
        "replicas"] == 1, 10)
    shown = ok(live_sim.kubectl(V, "-n", "llm", "get", "isvc", "llama", "-o", "jsonpath={.status.conditions}"))
    assert {c["type"]: c["status"] for c in json.loads(shown)}["PredictorReady"] == "False"


def test_the_kserve_seed_installs_the_crds_and_serves_its_inferenceservice(tmp_path) -> None:
    cluster = Cluster("kserve", speed=600)
    cluster.start()
    try:
        cluster.apply_seed("kserve", wait=True, timeout=60)
        assert {kw.ISVC, "servingruntimes.serving.kserve.io"} <= {
            c["metadata"]["name"] for c in cluster.store.list("customresourcedefinitions.apiextensions.k8s.io")[0]}
        assert cluster.wait_for(lambda: kw.ready(cluster), 30), kw.status(cluster)
        assert kw.predictor(cluster)["latestReadyRevision"] == "llama-predictor-00001"
    finally:
        cluster.stop()
    with pytest.raises(UserError, match=r"seed: crds: unknown CRD 'istio'"):
        Cluster("other").apply_seed({"crds": ["istio"]})
