"""Rollout wait (fail fast on crash loops / unschedulable) and the guarded writes, over the fake API server.

Time is a stepping clock: each ``sleep`` advances it and lets the scenario move the cluster on, the way
the rehearsal cluster's simulated clock does — so the loop's own timing decisions are exercised exactly.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fixtures.kube_fakeapi import FakeApi, started
from fixtures.kube_objects import GOOD_ARGS, MAX_LEN_LOG, crashloop_pod, incident, pod_template
from fixtures.kube_writes import mark_known_good
from vllm_remedy.kube.actions import read_rollout, undo
from vllm_remedy.kube.annotations import Keys
from vllm_remedy.kube.client import KubeClient, RetryPolicy
from vllm_remedy.kube.errors import ConflictError, RolloutError
from vllm_remedy.kube.rollout import RULE_MARK, choose_rollback
from vllm_remedy.kube.wait import rollout_status, wait_for_rollout

T0 = 1_741_000_000.0


class StepClock:
    def __init__(self, on_sleep: Callable[[float], None] = lambda t: None) -> None:
        self.t = T0
        self.on_sleep = on_sleep
        self.sleeps: list[float] = []

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.t += seconds
        self.sleeps.append(seconds)
        self.on_sleep(self.t - T0)


@pytest.fixture
def api(tmp_path: Path):
    fake = started(tmp_path, sleep=lambda s: None)
    dep, rss = incident()
    dep["status"] = {"observedGeneration": 7, "replicas": 2, "updatedReplicas": 1, "readyReplicas": 1,
                     "availableReplicas": 1}
    fake.add("deployments", dep)
    for rs in rss:
        fake.add("replicasets", rs)
    yield fake
    fake.stop()


def owned_by_rs15(pod: dict[str, Any]) -> dict[str, Any]:
    pod["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "controller": True,
                                           "name": "llama-8b-5f6c7d8b9a", "uid": "rs-5f6c7d8b9a"}]
    return pod


def old_ready_pod() -> dict[str, Any]:
    """A ready pod of revision 14: the same selector, but not the new ReplicaSet's — must be ignored."""
    pod = crashloop_pod("llama-8b-7c9d8f6b4f-old01")
    pod["metadata"]["ownerReferences"] = [{"controller": True, "uid": "rs-7c9d8f6b4f", "kind": "ReplicaSet"}]
    pod["status"]["containerStatuses"][0]["state"] = {"running": {}}
    return pod


def test_rollout_status_messages_are_kubectls() -> None:
    dep, _ = incident()
    dep["status"] = {"observedGeneration": 7, "replicas": 2, "updatedReplicas": 1, "availableReplicas": 1}
    assert rollout_status(dep) == ('Waiting for deployment "llama-8b" rollout to finish: 1 old replicas are '
                                   "pending termination...\n", False)
    dep["metadata"]["generation"] = 8
    assert rollout_status(dep) == ("Waiting for deployment spec update to be observed...\n", False)
    dep["status"] = {"observedGeneration": 8, "replicas": 1, "updatedReplicas": 0}
    assert rollout_status(dep)[0] == ('Waiting for deployment "llama-8b" rollout to finish: 0 out of 1 new '
                                      "replicas have been updated...\n")
    dep["status"] = {"observedGeneration": 8, "replicas": 1, "updatedReplicas": 1, "availableReplicas": 0}
    assert rollout_status(dep)[0] == ('Waiting for deployment "llama-8b" rollout to finish: 0 of 1 updated '
                                      "replicas are available...\n")
    dep["status"]["availableReplicas"] = 1
    assert rollout_status(dep) == ('deployment "llama-8b" successfully rolled out\n', True)
    with pytest.raises(RolloutError, match=r"desired revision \(14\) is different from the running revision \(15\)"):
        rollout_status(dep, revision=14)


def test_crash_loop_fails_fast_with_classified_previous_log(api: FakeApi) -> None:
    starting = owned_by_rs15(crashloop_pod())
    starting["status"]["containerStatuses"][0].update(
        {"restartCount": 0, "state": {"waiting": {"reason": "ContainerCreating"}}, "lastState": {}})
    api.add("pods", starting)
    api.add("pods", old_ready_pod())
    api.logs[("llama-8b-5f6c7d8b9a-x7k2p", "vllm", True)] = MAX_LEN_LOG

    def tick(elapsed: float) -> None:
        if elapsed >= 20:
            api.objects[("pods", "llm", "llama-8b-5f6c7d8b9a-x7k2p")] = owned_by_rs15(crashloop_pod())

    clock = StepClock(tick)
    got = wait_for_rollout(api.client, "llm", "llama-8b", timeout=900, clock=clock, interval=10)
    assert (got.ok, got.outcome, got.elapsed) == (False, "crash-loop", 20.0)
    assert got.message == ("pod llama-8b-5f6c7d8b9a-x7k2p container vllm: CrashLoopBackOff (last exit 1, Error); "
                           "startup log: max_len_exceeds_kv")
    assert (got.crash.failure, got.crash.restarts, got.crash.startup.gpu_blocks) == ("max_len_exceeds_kv", 5, 1478)
    log_calls = [s for s in api.seen if s.path.endswith("/log")]
    assert [(s.path, s.query) for s in log_calls] == [
        ("/api/v1/namespaces/llm/pods/llama-8b-5f6c7d8b9a-x7k2p/log", {"container": "vllm", "previous": "true"})]


def test_host_oom_kill_without_a_log_is_still_classified(api: FakeApi) -> None:
    api.add("pods", owned_by_rs15(crashloop_pod(reason="OOMKilled", exit_code=137)))
    got = wait_for_rollout(api.client, "llm", "llama-8b", clock=StepClock())
    assert (got.outcome, got.crash.failure, got.crash.log) == ("crash-loop", "host_oom_killed", None)


def test_unschedulable_fails_after_grace_with_scheduler_message(api: FakeApi) -> None:
    message = "0/2 nodes are available: 2 Insufficient nvidia.com/gpu."
    pending = owned_by_rs15(crashloop_pod())
    pending["spec"].pop("nodeName")
    pending["status"] = {"phase": "Pending", "conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}]}
    api.add("pods", pending)
    clock = StepClock()
    got = wait_for_rollout(api.client, "llm", "llama-8b", clock=clock, interval=15, unschedulable_grace=60)
    assert (got.outcome, got.elapsed, got.crash.kind) == ("unschedulable", 60.0, "unschedulable")
    assert got.message == f"pod llama-8b-5f6c7d8b9a-x7k2p: Unschedulable: {message}"


def test_success_progress_deadline_and_timeout(api: FakeApi) -> None:
    def finish(elapsed: float) -> None:
        if elapsed >= 30:
            api.get("deployments", "llm", "llama-8b")["status"].update({"replicas": 1, "availableReplicas": 1})

    got = wait_for_rollout(api.client, "llm", "llama-8b", clock=StepClock(finish), interval=10)
    assert (got.ok, got.outcome, got.elapsed, got.message) == (
        True, "rolled-out", 30.0, 'deployment "llama-8b" successfully rolled out')
    assert got.statuses == ['Waiting for deployment "llama-8b" rollout to finish: 1 old replicas are pending '
                            "termination...\n", 'deployment "llama-8b" successfully rolled out\n']
    status = api.get("deployments", "llm", "llama-8b")["status"]
    status["replicas"] = 2
    got = wait_for_rollout(api.client, "llm", "llama-8b", clock=StepClock(), interval=10, timeout=45)
    assert (got.ok, got.outcome, got.elapsed) == (False, "timeout", 50.0)
    status["conditions"] = [{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded"}]
    got = wait_for_rollout(api.client, "llm", "llama-8b", clock=StepClock())
    assert (got.outcome, got.message) == ("progress-deadline", 'deployment "llama-8b" exceeded its progress deadline')


# ---- writes ---------------------------------------------------------------------------------

def test_undo_writes_guarded_patch_and_restores_revision_14(api: FakeApi) -> None:
    _, answer = undo(api.client, "llm", "llama-8b", 14, reason="CUDA OOM crash loop", at=T0)
    stored = api.get("deployments", "llm", "llama-8b")
    assert stored["spec"]["template"] == pod_template(GOOD_ARGS, "NVIDIA-L40S") == answer["spec"]["template"]
    assert stored["metadata"]["annotations"]["kubernetes.io/change-cause"] == "vllm-remedy restore: CUDA OOM crash loop"
    patch = [s for s in api.seen if s.method == "PATCH"]
    assert len(patch) == 1 and patch[0].query == {"fieldManager": "vllm-remedy"}
    again, answer = undo(api.client, "llm", "llama-8b", 14, at=T0)
    assert (again.skipped, answer) == (True, None)
    assert [s.method for s in api.seen].count("PATCH") == 1


def test_concurrent_edit_is_never_overwritten(api: FakeApi) -> None:
    seen_by_operator = read_rollout(api.client, "llm", "llama-8b")
    edited = copy.deepcopy(api.get("deployments", "llm", "llama-8b"))
    edited["spec"]["replicas"] = 3
    edited["metadata"]["resourceVersion"] = "5000"  # someone scaled it meanwhile
    api.objects[("deployments", "llm", "llama-8b")] = edited
    with pytest.raises(ConflictError) as err:
        undo(api.client, "llm", "llama-8b", 14, at=T0, state=seen_by_operator)
    assert "changed since it was read (HTTP 422); nothing was written" in str(err.value)
    assert api.get("deployments", "llm", "llama-8b") == edited


def test_dry_run_changes_nothing(api: FakeApi) -> None:
    before = copy.deepcopy(api.get("deployments", "llm", "llama-8b"))
    plan, answer = undo(api.client, "llm", "llama-8b", 14, at=T0, dry_run=True)
    assert answer["spec"]["template"] == plan.template
    assert api.get("deployments", "llm", "llama-8b") == before
    assert [s.query for s in api.seen if s.method == "PATCH"] == [{"dryRun": "All", "fieldManager": "vllm-remedy"}]


def test_patch_whose_answer_was_lost_converges_instead_of_false_conflict(api: FakeApi, tmp_path: Path) -> None:
    client = KubeClient.for_context(kubeconfig=str(tmp_path / "config"), timeout=(1.0, 0.3),
                                    retry=RetryPolicy(attempts=3, base=1.0), sleep=time.sleep)
    state = read_rollout(client, "llm", "llama-8b")
    api.delays = [0.6]  # the PATCH lands, but its answer comes after the client gave up
    plan, answer = undo(client, "llm", "llama-8b", 14, at=T0, state=state)
    patches = [s for s in api.seen if s.method == "PATCH"]
    assert len(patches) == 2  # the retry failed its resourceVersion test...
    assert answer["spec"]["template"] == plan.template  # ...and was recognised as already applied


def test_known_good_mark_on_replicaset_drives_the_choice(api: FakeApi) -> None:
    mark_known_good(api.client, "llm", "llama-8b-6d8f7b9c5d", at=T0, reason="stable 30m, concurrency 9.1x")
    notes = api.get("replicasets", "llm", "llama-8b-6d8f7b9c5d")["metadata"]["annotations"]
    assert (notes["vllm-remedy.io/known-good"], notes["vllm-remedy.io/known-good-reason"]) == (
        "2025-03-03T11:06:40Z", "stable 30m, concurrency 9.1x")
    choice = choose_rollback(read_rollout(api.client, "llm", "llama-8b").history, 15, keys=Keys())
    assert (choice.revision.number, choice.rule) == (13, RULE_MARK)
    undo(api.client, "llm", "llama-8b", choice.revision.number, at=T0)
    assert "vllm-remedy.io/known-good" not in api.get("deployments", "llm", "llama-8b")["metadata"]["annotations"]


def test_a_rollout_that_dies_again_within_settle_is_no_success(api: FakeApi) -> None:
    """Shed pods Ready for a moment, then OOM under the same load: with ``settle`` the wait says so (review #5)."""
    from vllm_remedy.kube.wait import wait_restored

    status = api.get("deployments", "llm", "llama-8b")["status"]
    status.update({"replicas": 1, "updatedReplicas": 1, "readyReplicas": 1, "availableReplicas": 1})
    serving = owned_by_rs15(crashloop_pod())
    serving["status"]["containerStatuses"][0].update(
        {"restartCount": 0, "ready": True, "state": {"running": {"startedAt": "2025-03-03T11:06:40Z"}},
         "lastState": {}})
    serving["status"]["conditions"] = [{"type": "Ready", "status": "True",
                                        "lastTransitionTime": "2025-03-03T11:07:40Z"}]
    api.add("pods", serving)
    serving = api.get("pods", "llm", "llama-8b-5f6c7d8b9a-x7k2p")
    api.logs[("llama-8b-5f6c7d8b9a-x7k2p", "vllm", True)] = MAX_LEN_LOG

    def dies_again(elapsed: float) -> None:
        if elapsed >= 40:
            api.objects[("pods", "llm", "llama-8b-5f6c7d8b9a-x7k2p")] = owned_by_rs15(crashloop_pod())

    assert wait_restored(api.client, "llm", "llama-8b", 900, StepClock(dies_again), interval=10).ok  # no settle
    api.objects[("pods", "llm", "llama-8b-5f6c7d8b9a-x7k2p")] = serving
    got = wait_restored(api.client, "llm", "llama-8b", 900, StepClock(dies_again), interval=10, settle=120)
    assert (got.ok, got.outcome) == (False, "crash-loop")
    assert got.message.endswith("; it restarted 40s after the rollout completed"), got.message
    api.objects[("pods", "llm", "llama-8b-5f6c7d8b9a-x7k2p")] = serving  # serving again, and it stays up
    calm = wait_restored(api.client, "llm", "llama-8b", 900, StepClock(), interval=10, settle=120)
    assert calm.ok and calm.elapsed == 120.0
