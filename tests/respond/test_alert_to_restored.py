"""Game day "alert to restored": a bad rollout crash-loops on the rehearsal cluster; the real Prometheus evaluates the
rendered PrometheusRule against the cluster's kube-state-metrics series, the real Alertmanager posts to `vllm-remedy
respond`, and respond's restore deploy brings the known-good revision back — nobody in the loop
(tests/fixtures/alert_path.py). The figures (alert → first write → Ready against the policy's human response) are
bench/bench_respond.py's; this test asserts what happened, and in what order."""

from __future__ import annotations

from fixtures import pyinfra_run
from fixtures.alert_path import Watch, alert_path, note
from fixtures.pyinfra_run import Rehearsal
from fixtures.restore_world import NAME, NS, bad_revision, deployment, replicaset, vllm_runtime, wait_until
from vllm_remedy.kube.history import templates_equal

rehearsal = pyinfra_run.rehearsal
ANSWERED = {"VllmCudaOomRestart", "VllmCrashLoopBackOff"}  # whichever of the rendered rules fires first


def test_a_crash_loop_is_paged_by_the_rendered_rules_and_restored_by_the_responder(rehearsal: Rehearsal) -> None:
    good = replicaset(rehearsal, 14)
    with alert_path(rehearsal) as path:
        firing = [a for a in path.prometheus.alerts() if a["state"] == "firing"]
        assert not firing, firing  # a healthy cluster pages nobody
        vllm_runtime(rehearsal)
        bad = rehearsal.change(bad_revision, change_cause="drop --max-model-len; move to the L4 pool")
        watch = Watch(rehearsal, good, alertmanager=path.alertmanager)
        watch.arm(int(bad["metadata"]["generation"]))
        try:
            wait_until(lambda: watch.alerted is not None, timeout=60,
                       what="an alert of the rendered rules at Alertmanager (is the kube-state-metrics series there?)")
            path.responder.wait_log(r"Vllm\w+ on @k8s/rehearsal/llm/llama-8b: deploys/restore.py remediated",
                                    timeout=120)
            wait_until(lambda: watch.ready is not None, what="the restored revision to be Ready")
        finally:
            watch.stop.set()
        doc = note(path)
        labels = doc["alert"]["labels"]
        assert doc["alert"]["name"] in ANSWERED and doc["result"] == "remediated"
        # the labels are the rendered rule's (policy label) over kube-state-metrics' series (namespace, pod, uid)
        assert labels["policy"] == "gameday-llama-8b" and labels["severity"] == "critical"
        assert labels["namespace"] == NS and labels["pod"].startswith(f"{NAME}-") and labels["container"] == "vllm"
        assert labels["job"] == "kube-state-metrics" and labels["uid"]
        assert templates_equal(deployment(rehearsal)["spec"]["template"], good["spec"]["template"])
        assert watch.alerted is not None and watch.first_write is not None and watch.ready is not None
        assert watch.armed <= watch.alerted + 1 and watch.alerted <= watch.first_write <= watch.ready
        assert len(list(path.responder.notes.glob("*.json"))) == 1  # the second alert is held by the cooldown
