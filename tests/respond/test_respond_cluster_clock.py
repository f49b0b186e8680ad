"""`vllm-remedy respond`'s cool-down counts in the cluster's clock — the one every writing deploy stamps
``last-action-at`` in (the API server's Date) — for the stamp and for its own memory, and a changed
``respond.cooldown`` acts on the next page (hostile review 15b, F9). The rehearsal cluster runs ahead of the wall
clock (compressed), so a responder comparing with its own clock was muted for hours after any deploy.

The real CLI (responder and pyinfra) against the rehearsal cluster."""

from __future__ import annotations

import re

from fixtures import pyinfra_run
from fixtures.pyinfra_run import Rehearsal
from fixtures.responder import Responder, alert, payload, start, write_inventory
from fixtures.restore_world import LOCAL, NAME, NS, RESTORE, deployment, incident, wait_until
from vllm_remedy.kube.annotations import parse_rfc3339

rehearsal = pyinfra_run.rehearsal
STAMP = "vllm-remedy.io/last-action-at"
HOST = "@k8s/rehearsal/llm/llama-8b"


def page(responder: Responder, name: str, fingerprint: str) -> None:
    """Alertmanager posts one firing alert for the runbook's Deployment."""
    assert responder.post(payload([alert(name, fingerprint, namespace=NS, deployment=NAME)]))[0] == 200


def stamped_at(rehearsal: Rehearsal) -> float:
    return parse_rfc3339(deployment(rehearsal)["metadata"]["annotations"][STAMP])


def test_a_deploys_stamp_is_compared_with_the_clusters_clock(rehearsal: Rehearsal) -> None:
    incident(rehearsal)
    got = rehearsal.pyinfra(LOCAL, RESTORE, "-y", "--data", "progress_seconds=0")
    assert got.returncode == 0, got.stderr
    clock = rehearsal.cluster.clock
    clock.set_speed(60.0)  # the `sim up` default: 15 cluster minutes are 15 s of the test's time
    at = stamped_at(rehearsal)
    responder = start(rehearsal, write_inventory(rehearsal.tmp, "auto", cooldown="15m"))
    try:
        page(responder, "VllmCudaOomRestart", "c10c01")
        (line,) = responder.wait_log(r"\[c10c01\] skipped: .*cool-down: last action at \S+ by restore \((\d+)s left\)")
        left = int(re.search(r"\((\d+)s left\)", line).group(1))
        # what is left is the cool-down less the stamp's age on the cluster's clock (the responder started meanwhile)
        assert 0 < left <= 900 and abs(left - (900 - (clock.now() - at))) <= 30, (line, clock.now() - at)
        clock.set_speed(600.0)
        wait_until(lambda: clock.now() - at > 16 * 60, 10, "the cool-down to pass in cluster time")
        page(responder, "VllmCudaOomRestart", "c10c02")
        responder.wait_log(r"\[c10c02\] run: ")  # acted: 16 cluster minutes after the deploy, whatever the wall says
        responder.wait_log(rf"{re.escape(HOST)}: VllmCudaOomRestart on .* (remediated|nothing-to-change)")
    finally:
        responder.stop()


def test_the_in_memory_cool_down_counts_in_cluster_time_and_a_changed_policy_value_acts_on_the_next_page(
        rehearsal: Rehearsal) -> None:
    inventory = write_inventory(rehearsal.tmp, "auto", cooldown="12h")
    responder = start(rehearsal, inventory)
    try:
        incident(rehearsal)
        page(responder, "VllmCrashLoopBackOff", "f00d01")
        responder.wait_log(rf"{re.escape(HOST)}: VllmCrashLoopBackOff on .* remediated")
        page(responder, "VllmCudaOomRestart", "f00d02")
        (line,) = responder.wait_log(r"\[f00d02\] skipped: .*in cool-down for another (\d+)s")
        assert int(re.search(r"another (\d+)s", line).group(1)) <= 12 * 3600
        policy = rehearsal.tmp / "respond-policy.yaml"  # the inventory file stays as it was
        policy.write_text(policy.read_text().replace("cooldown: 12h", "cooldown: 1m"))
        clock, at = rehearsal.cluster.clock, stamped_at(rehearsal)
        wait_until(lambda: clock.now() - at > 15 * 60, 10, "cluster minutes past the action")
        page(responder, "VllmCudaOomRestart", "f00d03")
        responder.wait_log(r"\[f00d03\] run: ")
        responder.wait_log(rf"{re.escape(HOST)}: VllmCudaOomRestart on .* (remediated|nothing-to-change)")
    finally:
        responder.stop()
