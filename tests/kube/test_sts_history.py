"""StatefulSet history/undo/status computed from ControllerRevisions, checked against real kubectl 1.32 on the
rehearsal cluster: same table, same undo target and result, and the pods a forced rollback must delete."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fixtures import sim_world
from fixtures.sim_world import Sim
from fixtures.sts_world import image, ok, pods, settled, web
from vllm_remedy.kube import sts_history
from vllm_remedy.kube.client import JSON_PATCH, KubeClient
from vllm_remedy.kube.errors import ConflictError, RolloutError
from vllm_remedy.kube.history import history_table
from vllm_remedy.kube.sts_wait import wait_for_sts_rollout
from vllm_remedy.sim.runtime import EXIT_AFTER, EXIT_CODE

live_sim = sim_world.live_sim
V = "32"


@pytest.fixture(autouse=True)
def _need_kubectl() -> None:
    sim_world.require_kubectl(V)


def read(client: KubeClient) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    sts = client.request("GET", client.object_path("llm", "statefulsets", "web"))
    revs = client.request("GET", client.object_path("llm", "controllerrevisions"))["items"]
    live = client.request("GET", client.object_path("llm", "pods", group="v1"))["items"]
    return sts, revs, live


def test_history_and_undo_match_kubectl_and_the_forced_rollback_names_the_broken_pod(live_sim: Sim) -> None:
    client = KubeClient.for_context("a", str(live_sim.kubeconfig))
    ok(live_sim.kubectl(V, "-n", "llm", "apply", "-f", "-", stdin=json.dumps(web(2))))
    good = settled(live_sim, 2)["updateRevision"]
    sts, revs, _ = read(client)
    with pytest.raises(RolloutError, match=r"^no last revision to roll back to$"):
        sts_history.plan_undo(sts, revs)
    image(live_sim, "1.28", {EXIT_CODE: "1", EXIT_AFTER: "1"})
    store = live_sim.clusters["a"].store
    assert live_sim.clusters["a"].wait_for(lambda: len(set(pods(live_sim).values())) == 2, 8)
    sts, revs, live = read(client)
    ours = history_table(sts_history.sts_history(sts, revs))
    theirs = ok(live_sim.kubectl(V, "-n", "llm", "rollout", "history", "sts/web"))
    assert theirs == f"statefulset.apps/web \n{ours}\n"
    assert sts_history.rollout_status(sts) == ("Waiting for 1 pods to be ready...\n", False)

    plan = sts_history.plan_undo(sts, revs)
    assert (plan.revision, plan.controller_revision, plan.skipped) == (1, good, False)
    with pytest.raises(RolloutError, match=r"^unable to find specified revision 7 in history$"):
        sts_history.plan_undo(sts, revs, 7)
    for _ in range(5):  # the patch is guarded by the read's resourceVersion; a status update in between: read again
        try:
            client.request("PATCH", client.object_path("llm", "statefulsets", "web"), body=plan.patch,
                           content_type=JSON_PATCH)
            break
        except ConflictError:
            sts, revs, _ = read(client)
            plan = sts_history.plan_undo(sts, revs)
    assert live_sim.clusters["a"].wait_for(
        lambda: store.get("statefulsets.apps", "llm", "web")["status"].get("updateRevision") == good, 5)
    # kubectl sees what its own undo would have made: revision 1 re-numbered 3
    assert ok(live_sim.kubectl(V, "-n", "llm", "rollout", "history", "sts/web")).split()[3:] == [
        "2", "<none>", "3", "<none>"]
    sts, revs, live = read(client)
    assert sts_history.plan_undo(sts, revs, 3).skipped  # kubectl: "skipped rollback (current template ...)"
    blocking = sts_history.pods_blocking_rollback(sts, live, good)
    assert blocking == ["web-1"]  # crash-looping on the bad revision: OrderedReady waits on it forever
    for name in blocking:
        ok(live_sim.kubectl(V, "-n", "llm", "delete", "pod", name, "--wait=false"))
    settled(live_sim, 2)
    sts, _, live = read(client)
    assert sts_history.pods_blocking_rollback(sts, live, good) == []
    assert sts_history.rollout_status(sts) == ("partitioned roll out complete: 2 new pods have been updated...\n",
                                               True)


def test_on_delete_every_pod_off_the_target_blocks() -> None:
    sts = {"spec": {"updateStrategy": {"type": "OnDelete"}}}
    pod = {"metadata": {"name": "web-0", "labels": {"controller-revision-hash": "web-old"}},
           "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}
    assert sts_history.pods_blocking_rollback(sts, [pod], "web-new") == ["web-0"]
    assert sts_history.pods_blocking_rollback({"spec": {}}, [pod], "web-new") == []  # ready: the controller moves on
    with pytest.raises(RolloutError, match=r"^rollout status is only available for RollingUpdate strategy type$"):
        sts_history.rollout_status(sts)


def test_the_wait_fails_fast_on_the_crash_loop_then_names_the_pod_a_rollback_waits_on(live_sim: Sim) -> None:
    client = KubeClient.for_context("a", str(live_sim.kubeconfig))
    clock = live_sim.clusters["a"].clock
    ok(live_sim.kubectl(V, "-n", "llm", "apply", "-f", "-", stdin=json.dumps(web(2))))
    first = wait_for_sts_rollout(client, "llm", "web", timeout=300, clock=clock, interval=2)
    assert (first.ok, first.outcome) == (True, "rolled-out"), first.message
    image(live_sim, "1.28", {EXIT_CODE: "1", EXIT_AFTER: "1"})
    failed = wait_for_sts_rollout(client, "llm", "web", timeout=300, clock=clock, interval=2, fetch_log=False)
    assert (failed.ok, failed.outcome, failed.crash.pod) == (False, "crash-loop", "web-1"), failed.message
    sts, revs, _ = read(client)
    plan = sts_history.plan_undo(sts, revs)
    client.request("PATCH", client.object_path("llm", "statefulsets", "web"), body=plan.patch,
                   content_type=JSON_PATCH)
    stuck = wait_for_sts_rollout(client, "llm", "web", timeout=300, clock=clock, interval=2)
    assert (stuck.ok, stuck.outcome, stuck.message) == (False, "blocked", (
        "statefulset web: podManagementPolicy OrderedReady does not move past a pod that is not Running and Ready: "
        "delete pod web-1 for the change to take effect"))
    ok(live_sim.kubectl(V, "-n", "llm", "delete", "pod", "web-1", "--wait=false"))
    restored = wait_for_sts_rollout(client, "llm", "web", timeout=300, clock=clock, interval=2)
    assert (restored.ok, restored.outcome) == (True, "rolled-out"), restored.message
    assert set(pods(live_sim).values()) == {plan.controller_revision}


def test_on_delete_wait_names_every_pod_left_behind(live_sim: Sim) -> None:
    client = KubeClient.for_context("a", str(live_sim.kubeconfig))
    clock = live_sim.clusters["a"].clock
    ok(live_sim.kubectl(V, "-n", "llm", "apply", "-f", "-", stdin=json.dumps(web(2, {"type": "OnDelete"}))))
    assert wait_for_sts_rollout(client, "llm", "web", timeout=300, clock=clock, interval=2).ok
    image(live_sim, "1.28")
    got = wait_for_sts_rollout(client, "llm", "web", timeout=300, clock=clock, interval=2)
    assert (got.ok, got.outcome, got.message) == (False, "blocked", (
        "statefulset web: updateStrategy OnDelete replaces a pod only when it is deleted: delete pod web-0, web-1 "
        "for the change to take effect"))
