"""The rehearsal cluster's StatefulSets as real kubectl 1.32 sees them: ordered pods, ControllerRevision history,
``rollout history/undo/status sts/…``, partition, OnDelete, and the forced rollback a crash loop needs."""

from __future__ import annotations

import json

import pytest

from fixtures import sim_world
from fixtures.sim_world import Sim
from fixtures.sts_world import STS, image, ok, pods, settled, web
from vllm_remedy.sim.runtime import EXIT_AFTER, EXIT_CODE

live_sim = sim_world.live_sim
V = "32"


@pytest.fixture(autouse=True)
def _need_kubectl() -> None:
    sim_world.require_kubectl(V)


def test_ordered_creation_history_and_undo_as_kubectl_reads_them(live_sim: Sim) -> None:
    ok(live_sim.kubectl(V, "-n", "llm", "apply", "-f", "-", stdin=json.dumps(web())))
    first = settled(live_sim)
    events = [e["message"] for e in sorted(live_sim.clusters["a"].store.list("events", "llm")[0],
                                           key=lambda e: int(e["metadata"]["resourceVersion"]))
              if e["reason"] == "SuccessfulCreate"]
    assert events == [f"create Pod web-{i} in StatefulSet web successful" for i in range(3)]
    image(live_sim, "1.28")
    second = settled(live_sim)
    assert second["updateRevision"] != first["updateRevision"]
    assert set(pods(live_sim).values()) == {second["updateRevision"]}
    history = ok(live_sim.kubectl(V, "-n", "llm", "rollout", "history", "sts/web")).split()
    assert history == ["statefulset.apps/web", "REVISION", "CHANGE-CAUSE", "1", "<none>", "2", "<none>"]
    shown = ok(live_sim.kubectl(V, "-n", "llm", "rollout", "history", "sts/web", "--revision", "1"))
    assert "nginx:1.27" in shown
    undone = ok(live_sim.kubectl(V, "-n", "llm", "rollout", "undo", "sts/web"))
    assert undone.strip() == "statefulset.apps/web rolled back"
    third = settled(live_sim)
    assert third["updateRevision"] == first["updateRevision"]  # the old revision, re-numbered, not a copy
    history = ok(live_sim.kubectl(V, "-n", "llm", "rollout", "history", "sts/web")).split()
    assert history[3:] == ["2", "<none>", "3", "<none>"]
    # the apiserver defaults rollingUpdate.partition to 0, so kubectl reports a partitioned roll out
    assert ok(live_sim.kubectl(V, "-n", "llm", "rollout", "status", "sts/web", "--timeout", "20s")) == \
        "partitioned roll out complete: 3 new pods have been updated...\n"


def test_partition_updates_only_ordinals_at_or_above_it(live_sim: Sim) -> None:
    ok(live_sim.kubectl(V, "-n", "llm", "apply", "-f", "-", stdin=json.dumps(
        web(strategy={"type": "RollingUpdate", "rollingUpdate": {"partition": 2}}))))
    old = settled(live_sim)["updateRevision"]
    image(live_sim, "1.28")
    store = live_sim.clusters["a"].store
    assert live_sim.clusters["a"].wait_for(
        lambda: (store.get(STS, "llm", "web").get("status") or {}).get("updatedReplicas") == 1
        and (store.get(STS, "llm", "web").get("status") or {}).get("readyReplicas") == 3, 8)
    new = store.get(STS, "llm", "web")["status"]["updateRevision"]
    assert pods(live_sim) == {"web-0": old, "web-1": old, "web-2": new}
    assert store.get(STS, "llm", "web")["status"]["currentRevision"] == old


def test_on_delete_changes_a_pod_only_when_it_is_deleted(live_sim: Sim) -> None:
    ok(live_sim.kubectl(V, "-n", "llm", "apply", "-f", "-", stdin=json.dumps(web(2, {"type": "OnDelete"}))))
    old = settled(live_sim, 2)["updateRevision"]
    image(live_sim, "1.28")
    store = live_sim.clusters["a"].store
    assert live_sim.clusters["a"].wait_for(
        lambda: store.get(STS, "llm", "web")["status"].get("updateRevision") != old, 5)
    new = store.get(STS, "llm", "web")["status"]["updateRevision"]
    assert pods(live_sim) == {"web-0": old, "web-1": old}
    ok(live_sim.kubectl(V, "-n", "llm", "delete", "pod", "web-1", "--wait=false"))
    assert live_sim.clusters["a"].wait_for(lambda: pods(live_sim) == {"web-0": old, "web-1": new}, 8), pods(live_sim)


def test_a_crash_looping_pod_blocks_the_rollback_until_it_is_deleted(live_sim: Sim) -> None:
    """OrderedReady never moves past a pod that is not Running and Ready — not even to roll back (the docs'
    "forced rollback"): after ``rollout undo`` the broken pod stays until someone deletes it."""
    ok(live_sim.kubectl(V, "-n", "llm", "apply", "-f", "-", stdin=json.dumps(web(2))))
    good = settled(live_sim, 2)["updateRevision"]
    image(live_sim, "1.28", {EXIT_CODE: "1", EXIT_AFTER: "1"})
    store = live_sim.clusters["a"].store
    assert live_sim.clusters["a"].wait_for(lambda: len(set(pods(live_sim).values())) == 2 and any(
        int(c.get("restartCount", 0)) >= 1 for p in store.list("pods", "llm")[0]
        for c in (p.get("status") or {}).get("containerStatuses") or []), 8)
    bad = store.get(STS, "llm", "web")["status"]["updateRevision"]
    assert pods(live_sim) == {"web-0": good, "web-1": bad}
    ok(live_sim.kubectl(V, "-n", "llm", "rollout", "undo", "sts/web"))
    assert live_sim.clusters["a"].wait_for(
        lambda: store.get(STS, "llm", "web")["status"].get("updateRevision") == good, 5)
    assert pods(live_sim) == {"web-0": good, "web-1": bad}  # stuck: the controller waits on web-1
    ok(live_sim.kubectl(V, "-n", "llm", "delete", "pod", "web-1", "--wait=false"))
    assert settled(live_sim, 2)["currentRevision"] == good


def test_a_revision_carries_the_change_cause_the_set_had_when_it_was_created(live_sim: Sim) -> None:
    """The upstream controller copies the set's annotations onto each ControllerRevision it creates; that is where
    `kubectl rollout history sts/…` reads CHANGE-CAUSE (a revision re-numbered by an undo keeps its own)."""
    ok(live_sim.kubectl(V, "-n", "llm", "apply", "-f", "-", stdin=json.dumps(web())))
    settled(live_sim)
    ok(live_sim.kubectl(V, "-n", "llm", "annotate", "sts/web", "kubernetes.io/change-cause=nginx 1.28 for the CVE"))
    image(live_sim, "1.28")
    settled(live_sim)
    history = ok(live_sim.kubectl(V, "-n", "llm", "rollout", "history", "sts/web")).splitlines()
    assert [line.split(None, 1) for line in history[1:] if line] == [["REVISION", "CHANGE-CAUSE"], ["1", "<none>"],
                                                             ["2", "nginx 1.28 for the CVE"]], history


def test_only_the_fields_the_apiserver_allows_may_change(live_sim: Sim) -> None:
    """serviceName and podManagementPolicy are fixed at creation on a real cluster (a hostile review patched both
    here); replicas, template and updateStrategy are not."""
    ok(live_sim.kubectl(V, "-n", "llm", "apply", "-f", "-", stdin=json.dumps(web())))
    for patch in ({"spec": {"podManagementPolicy": "Parallel"}}, {"spec": {"serviceName": "other"}}):
        got = live_sim.kubectl(V, "-n", "llm", "patch", "sts", "web", "-p", json.dumps(patch))
        assert got.returncode == 1, got.stdout
        assert got.stderr.strip() == (
            'The StatefulSet "web" is invalid: spec: Forbidden: updates to statefulset spec for fields other than '
            "'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', "
            "'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"), got.stderr
    ok(live_sim.kubectl(V, "-n", "llm", "patch", "sts", "web", "-p", json.dumps(
        {"spec": {"replicas": 2, "updateStrategy": {"type": "OnDelete"}}})))
