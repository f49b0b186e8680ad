"""Deployment/ReplicaSet controllers: the revision semantics kubectl's rollout commands depend on.

Each test drives a real Cluster (store + controller thread) at 600× simulated speed; no HTTP.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator

import pytest

from vllm_remedy.sim.clock import Clock
from vllm_remedy.sim.cluster import Cluster
from vllm_remedy.sim.controllers import rollout as ro
from vllm_remedy.sim.controllers.hashing import ALPHABET, pod_template_hash
from vllm_remedy.sim.controllers.util import condition, controlled_by, pod_ready
from vllm_remedy.sim.seed import make_node

DEPLOY, RS = "deployments.apps", "replicasets.apps"
SAFE = f"[{ALPHABET}]"


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    c = Cluster("test", clock=Clock(speed=600))
    for i in range(1, 4):
        c.store.create("nodes", make_node({"name": f"l40s-{i}", "gpu": {"product": "NVIDIA-L40S", "count": 2}}, "t"))
    c.store.create("nodes", make_node({"name": "cpu-1", "cpu": "64"}, "t"))
    c.start()
    yield c
    c.stop()


def deployment(image: str = "vllm/vllm-openai:v0.8.5", replicas: int = 2, **spec: object) -> dict:
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "llama-8b", "namespace": "llm", "labels": {"app": "llama-8b"},
                     "annotations": {"kubernetes.io/change-cause": f"image {image}",
                                     "kubectl.kubernetes.io/last-applied-configuration": "{}"}},
        "spec": {
            "replicas": replicas, "selector": {"matchLabels": {"app": "llama-8b"}},
            "template": {"metadata": {"labels": {"app": "llama-8b"}},
                         "spec": {"containers": [{"name": "vllm", "image": image}]}},
            **spec,
        },
    }


def set_template(c: Cluster, template: dict, cause: str | None = None) -> dict:
    def edit(obj: dict) -> None:
        obj["spec"]["template"] = copy.deepcopy(template)
        if cause:
            obj["metadata"]["annotations"]["kubernetes.io/change-cause"] = cause
    return c.store.mutate(DEPLOY, "llm", "llama-8b", edit)


def set_image(c: Cluster, image: str) -> dict:
    d = c.store.get(DEPLOY, "llm", "llama-8b")
    template = d["spec"]["template"]
    template["spec"]["containers"][0]["image"] = image
    return set_template(c, template, f"image {image}")


def owned_rses(c: Cluster) -> list[dict]:
    d = c.store.get(DEPLOY, "llm", "llama-8b")
    return c.store.list(RS, "llm", lambda o: controlled_by(o, d["metadata"]["uid"]))[0]


def by_revision(c: Cluster) -> dict[str, dict]:
    return {rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"]: rs for rs in owned_rses(c)}


def rolled_out(c: Cluster, timeout: float = 5.0) -> bool:
    return c.wait_for(lambda: c.rolled_out("llm", "llama-8b"), timeout)


def test_rollout_creates_replicaset_with_hash_revision_and_owner(cluster):
    made = cluster.store.create(DEPLOY, deployment())
    assert rolled_out(cluster)
    [rs] = owned_rses(cluster)
    template_hash = pod_template_hash(made["spec"]["template"])
    assert re.fullmatch(f"{SAFE}{{6,10}}", template_hash)
    assert rs["metadata"]["name"] == f"llama-8b-{template_hash}"
    assert rs["metadata"]["labels"] == {"app": "llama-8b", "pod-template-hash": template_hash}
    assert rs["spec"]["selector"] == {"matchLabels": {"app": "llama-8b", "pod-template-hash": template_hash}}
    assert rs["spec"]["template"]["metadata"]["labels"]["pod-template-hash"] == template_hash
    assert rs["metadata"]["annotations"] == {
        "kubernetes.io/change-cause": "image vllm/vllm-openai:v0.8.5",
        "deployment.kubernetes.io/revision": "1",
        "deployment.kubernetes.io/desired-replicas": "2",
        "deployment.kubernetes.io/max-replicas": "3",  # 2 + ceil(25% of 2)
    }
    [owner] = rs["metadata"]["ownerReferences"]
    assert owner == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "llama-8b",
                     "uid": made["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}
    pods = cluster.store.list("pods", "llm")[0]
    assert len(pods) == 2
    for pod in pods:
        assert re.fullmatch(f"llama-8b-{template_hash}-{SAFE}{{5}}", pod["metadata"]["name"])
        assert pod["metadata"]["ownerReferences"][0]["uid"] == rs["metadata"]["uid"]
    d = cluster.store.get(DEPLOY, "llm", "llama-8b")
    assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
    status = d["status"]
    assert {k: status.get(k) for k in ("observedGeneration", "replicas", "updatedReplicas", "readyReplicas",
                                       "availableReplicas", "unavailableReplicas")} == {
        "observedGeneration": 1, "replicas": 2, "updatedReplicas": 2, "readyReplicas": 2,
        "availableReplicas": 2, "unavailableReplicas": None}
    available, progressing = condition(status, "Available"), condition(status, "Progressing")
    assert (available["status"], available["reason"]) == ("True", "MinimumReplicasAvailable")
    assert (progressing["status"], progressing["reason"], progressing["message"]) == (
        "True", "NewReplicaSetAvailable", f'ReplicaSet "llama-8b-{template_hash}" has successfully progressed.')
    assert ro.rollout_status_message(d) == (True, 'deployment "llama-8b" successfully rolled out')


def test_identical_template_is_reused_with_revision_bump_and_history(cluster):
    cluster.store.create(DEPLOY, deployment("vllm/vllm-openai:v0.8.4"))
    assert rolled_out(cluster)
    first = owned_rses(cluster)[0]["metadata"]["name"]
    set_image(cluster, "vllm/vllm-openai:v0.8.5")
    assert rolled_out(cluster)
    second = by_revision(cluster)["2"]["metadata"]["name"]
    # What `kubectl rollout undo` PATCHes: the old RS template minus the hash label.
    template = copy.deepcopy(by_revision(cluster)["1"]["spec"]["template"])
    del template["metadata"]["labels"]["pod-template-hash"]
    set_template(cluster, template, "image vllm/vllm-openai:v0.8.4")
    assert rolled_out(cluster)
    revs = by_revision(cluster)
    assert sorted(revs) == ["2", "3"]
    assert revs["3"]["metadata"]["name"] == first
    assert revs["3"]["metadata"]["annotations"]["deployment.kubernetes.io/revision-history"] == "1"
    assert revs["3"]["spec"]["replicas"] == 2 and revs["2"]["spec"]["replicas"] == 0
    d = cluster.store.get(DEPLOY, "llm", "llama-8b")
    assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "3"
    set_image(cluster, "vllm/vllm-openai:v0.8.5")
    assert rolled_out(cluster)
    set_image(cluster, "vllm/vllm-openai:v0.8.4")
    assert rolled_out(cluster)
    revs = by_revision(cluster)
    assert sorted(revs) == ["4", "5"]
    assert revs["4"]["metadata"]["name"] == second
    assert revs["4"]["metadata"]["annotations"]["deployment.kubernetes.io/revision-history"] == "2"
    assert revs["5"]["metadata"]["annotations"]["deployment.kubernetes.io/revision-history"] == "1,3"


def test_defaulted_and_bare_templates_are_the_same_revision(cluster):
    cluster.store.create(DEPLOY, deployment())
    assert rolled_out(cluster)
    d = cluster.store.get(DEPLOY, "llm", "llama-8b")
    template = d["spec"]["template"]
    template["spec"].update({"restartPolicy": "Always", "dnsPolicy": "ClusterFirst", "nodeSelector": {}})
    template["spec"]["containers"][0].update({"imagePullPolicy": "IfNotPresent", "resources": {}})
    changed = set_template(cluster, template)
    assert changed["metadata"]["generation"] == 2
    assert cluster.wait_for(lambda: cluster.store.get(DEPLOY, "llm", "llama-8b")["status"]
                            .get("observedGeneration") == 2, 3)
    assert [rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"] for rs in owned_rses(cluster)] == ["1"]


def watch_pods(c: Cluster) -> list[tuple[int, int]]:
    """(pods the ReplicaSets ask for, ready pods) after every change, recorded from the store's change feed.

    The surge bound is on the ReplicaSets' spec.replicas, which is what the deployment controller holds to:
    live pods may briefly exceed it while an old ReplicaSet's controller has yet to act on its scale-down,
    in real Kubernetes as here. Ready pods exclude Terminating ones, as kube's availability arithmetic does.
    """
    seen: list[tuple[int, int]] = []

    def listener(event) -> None:
        if event.resource in ("pods", RS):
            asked = sum(rs["spec"].get("replicas", 0) for rs in c.store.list(RS, "llm")[0])
            pods = [p for p in c.store.list("pods", "llm")[0] if not p["metadata"].get("deletionTimestamp")]
            seen.append((asked, sum(1 for p in pods if pod_ready(p))))

    c.store.subscribe(listener)
    return seen


@pytest.mark.parametrize(("surge", "unavailable", "max_pods", "min_ready"), [
    (1, 0, 5, 4),
    (0, "50%", 4, 2),
    ("50%", "25%", 6, 3),
])
def test_rolling_update_respects_max_surge_and_max_unavailable(cluster, surge, unavailable, max_pods, min_ready):
    body = deployment(replicas=4, strategy={"type": "RollingUpdate",
                                            "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable}})
    probe = {"httpGet": {"path": "/health", "port": 8000}}
    body["spec"]["template"]["spec"]["containers"][0]["readinessProbe"] = probe
    cluster.store.create(DEPLOY, body)
    assert rolled_out(cluster)
    seen = watch_pods(cluster)
    set_image(cluster, "vllm/vllm-openai:v0.9.0")
    assert rolled_out(cluster)
    assert max(total for total, _ in seen) == max_pods
    assert min(ready for _, ready in seen) == min_ready
    assert [rs["spec"]["replicas"] for rs in sorted(owned_rses(cluster), key=ro_rev)] == [0, 4]


def ro_rev(rs: dict) -> int:
    return int(rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"])


def test_fenceposts_round_like_kubernetes():
    def d(replicas: int, surge: object, unavailable: object) -> dict:
        return {"spec": {"replicas": replicas, "strategy": {"type": "RollingUpdate", "rollingUpdate": {
            "maxSurge": surge, "maxUnavailable": unavailable}}}}

    assert ro.resolve_fenceposts(d(10, "25%", "25%")) == (3, 2)   # surge rounds up, unavailable down
    assert ro.resolve_fenceposts(d(1, "25%", "25%")) == (1, 0)
    assert ro.resolve_fenceposts(d(3, 0, 0)) == (0, 1)            # both zero: one may be unavailable
    assert ro.resolve_fenceposts(d(4, "50%", 1)) == (2, 1)
    assert ro.max_unavailable(d(2, 0, 5)) == 2                    # capped at replicas
    assert ro.max_surge({"spec": {"replicas": 4, "strategy": {"type": "Recreate"}}}) == 0
    assert ro.new_rs_new_replicas(d(4, 1, 0), [{"spec": {"replicas": 4}}], None) == 1


def test_recreate_stops_old_pods_before_starting_new(cluster):
    cluster.store.create(DEPLOY, deployment(replicas=2, strategy={"type": "Recreate"}))
    assert rolled_out(cluster)
    old_rs = owned_rses(cluster)[0]["metadata"]["name"]
    mixed: list[set[str]] = []

    def listener(event) -> None:
        if event.resource == "pods":
            owners = {p["metadata"]["ownerReferences"][0]["name"] for p in cluster.store.list("pods", "llm")[0]}
            mixed.append(owners)

    cluster.store.subscribe(listener)
    set_image(cluster, "vllm/vllm-openai:v0.9.0")
    assert rolled_out(cluster)
    new_rs = by_revision(cluster)["2"]["metadata"]["name"]
    assert {old_rs} in mixed and {new_rs} in mixed
    assert not [owners for owners in mixed if len(owners) > 1]
    assert len(cluster.store.list("pods", "llm")[0]) == 2
    assert by_revision(cluster)["2"]["metadata"]["annotations"]["deployment.kubernetes.io/max-replicas"] == "2"


def test_progress_deadline_exceeded_then_rollback_recovers(cluster):
    body = deployment(replicas=1, progressDeadlineSeconds=30)
    body["spec"]["template"]["spec"]["containers"][0]["readinessProbe"] = {"httpGet": {"path": "/health", "port": 80}}
    cluster.store.create(DEPLOY, body)
    assert rolled_out(cluster)
    good = copy.deepcopy(cluster.store.get(DEPLOY, "llm", "llama-8b")["spec"]["template"])
    bad = copy.deepcopy(good)
    bad["metadata"]["annotations"] = {"sim.vllm-remedy.io/exit-code": "1", "sim.vllm-remedy.io/exit-after": "2"}
    set_template(cluster, bad)

    def timed_out() -> bool:
        cond = condition(cluster.store.get(DEPLOY, "llm", "llama-8b").get("status") or {}, "Progressing")
        return cond is not None and cond["reason"] == "ProgressDeadlineExceeded"

    assert cluster.wait_for(timed_out, 5)
    d = cluster.store.get(DEPLOY, "llm", "llama-8b")
    cond = condition(d["status"], "Progressing")
    bad_rs = by_revision(cluster)["2"]["metadata"]["name"]
    assert (cond["status"], cond["message"]) == ("False", f'ReplicaSet "{bad_rs}" has timed out progressing.')
    assert ro.rollout_status_message(d) == (False, 'error: deployment "llama-8b" exceeded its progress deadline')
    assert (d["status"]["availableReplicas"], d["status"]["updatedReplicas"], d["status"]["replicas"]) == (1, 1, 2)
    set_template(cluster, good)
    assert rolled_out(cluster)
    cond = condition(cluster.store.get(DEPLOY, "llm", "llama-8b")["status"], "Progressing")
    assert (cond["status"], cond["reason"]) == ("True", "NewReplicaSetAvailable")
    assert by_revision(cluster)["3"]["metadata"]["annotations"]["deployment.kubernetes.io/revision-history"] == "1"


def test_pausing_a_timed_out_rollout_keeps_progress_deadline_exceeded(cluster):
    body = deployment(replicas=1, progressDeadlineSeconds=30)
    body["spec"]["template"]["spec"]["containers"][0]["readinessProbe"] = {"httpGet": {"path": "/health", "port": 80}}
    cluster.store.create(DEPLOY, body)
    assert rolled_out(cluster)
    bad = copy.deepcopy(cluster.store.get(DEPLOY, "llm", "llama-8b")["spec"]["template"])
    bad["metadata"]["annotations"] = {"sim.vllm-remedy.io/exit-code": "1", "sim.vllm-remedy.io/exit-after": "2"}
    set_template(cluster, bad)

    def progressing() -> dict:
        return condition(cluster.store.get(DEPLOY, "llm", "llama-8b").get("status") or {}, "Progressing") or {}

    assert cluster.wait_for(lambda: progressing().get("reason") == "ProgressDeadlineExceeded", 5)
    timed_out = progressing()
    cluster.store.mutate(DEPLOY, "llm", "llama-8b", lambda o: o["spec"].__setitem__("paused", True))
    assert cluster.wait_for(lambda: cluster.store.get(DEPLOY, "llm", "llama-8b")["status"]
                            .get("observedGeneration") == 3, 3)
    assert progressing() == timed_out  # kube's checkPausedConditions leaves a reported timeout alone


def test_revision_history_limit_prunes_oldest_scaled_down_replicasets(cluster):
    cluster.store.create(DEPLOY, deployment("vllm/vllm-openai:v0.8.0", replicas=1, revisionHistoryLimit=2))
    assert rolled_out(cluster)
    for minor in range(1, 5):
        set_image(cluster, f"vllm/vllm-openai:v0.8.{minor}")
        assert rolled_out(cluster)
    assert cluster.wait_for(lambda: len(owned_rses(cluster)) == 3, 3)
    revs = by_revision(cluster)
    assert sorted(revs, key=int) == ["3", "4", "5"]
    assert revs["5"]["spec"]["template"]["spec"]["containers"][0]["image"] == "vllm/vllm-openai:v0.8.4"


def test_paused_deployment_makes_no_new_replicaset_until_resumed(cluster):
    cluster.store.create(DEPLOY, deployment(replicas=1))
    assert rolled_out(cluster)
    cluster.store.mutate(DEPLOY, "llm", "llama-8b", lambda o: o["spec"].__setitem__("paused", True))
    set_image(cluster, "vllm/vllm-openai:v0.9.0")
    assert cluster.wait_for(lambda: cluster.store.get(DEPLOY, "llm", "llama-8b")["status"]
                            .get("observedGeneration") == 3, 3)
    cond = condition(cluster.store.get(DEPLOY, "llm", "llama-8b")["status"], "Progressing")
    assert (cond["status"], cond["reason"], cond["message"]) == ("Unknown", "DeploymentPaused", "Deployment is paused")
    assert len(owned_rses(cluster)) == 1
    cluster.store.mutate(DEPLOY, "llm", "llama-8b", lambda o: o["spec"].__setitem__("paused", False))
    assert rolled_out(cluster)
    assert sorted(by_revision(cluster)) == ["1", "2"]


def test_scaling_and_cascading_delete(cluster):
    cluster.store.create(DEPLOY, deployment(replicas=1))
    assert rolled_out(cluster)
    cluster.store.mutate(DEPLOY, "llm", "llama-8b", lambda o: o["spec"].__setitem__("replicas", 3))
    assert cluster.wait_for(lambda: len(cluster.store.list("pods", "llm")[0]) == 3 and cluster.rolled_out(
        "llm", "llama-8b"), 3)
    assert len(owned_rses(cluster)) == 1
    cluster.store.delete(DEPLOY, "llm", "llama-8b")
    assert cluster.wait_for(lambda: not cluster.store.list(RS, "llm")[0] and not cluster.store.list("pods", "llm")[0],
                            3)


def test_scaling_during_a_stuck_rollout_is_proportional(cluster):
    body = deployment(replicas=4, strategy={"type": "RollingUpdate",
                                            "rollingUpdate": {"maxSurge": 2, "maxUnavailable": 0}})
    body["spec"]["template"]["spec"]["containers"][0]["readinessProbe"] = {"httpGet": {"path": "/", "port": 80}}
    cluster.store.create(DEPLOY, body)
    assert rolled_out(cluster)
    stuck = copy.deepcopy(cluster.store.get(DEPLOY, "llm", "llama-8b")["spec"]["template"])
    stuck["metadata"]["annotations"] = {"sim.vllm-remedy.io/ready-after": "100000"}  # never ready in this test
    set_template(cluster, stuck)
    assert cluster.wait_for(lambda: sorted(rs["spec"]["replicas"] for rs in owned_rses(cluster)) == [2, 4], 3)
    cluster.store.mutate(DEPLOY, "llm", "llama-8b", lambda o: o["spec"].__setitem__("replicas", 8))
    # allowed 8 + 2 surge = 10 from 6: old 4 → 4·10/6 ≈ 7 (+3), new 2 → 2·10/6 ≈ 3 (+1).
    assert cluster.wait_for(lambda: (by_revision(cluster)["1"]["spec"]["replicas"],
                                     by_revision(cluster)["2"]["spec"]["replicas"]) == (7, 3), 3)
    revs = by_revision(cluster)
    assert revs["1"]["metadata"]["annotations"]["deployment.kubernetes.io/desired-replicas"] == "8"
    assert revs["2"]["metadata"]["annotations"]["deployment.kubernetes.io/max-replicas"] == "10"
