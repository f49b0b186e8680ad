"""Evidence that outlives its pods (issue 11's review, S1 and M3), through the real pyinfra CLI.

A revision's pods can die and be deleted before any tool sees them: the runbook's bad rollout uses
``strategy: Recreate``, which deletes every pod of the revision before it. Its pods' Events ("Back-off
restarting failed container") stay for an hour, and the wait that watched a rollout crash records it, so
restore never returns to a revision it has evidence against — even one the memory model says fits.
"""

from __future__ import annotations

import json
from pathlib import Path

from fixtures import pyinfra_run
from fixtures.pyinfra_run import Rehearsal
from fixtures.restore_world import (
    BIG_CHUNKS,
    LOAD,
    NS,
    RESTORE,
    crash_looping,
    deployment,
    host_out,
    incident,
    no_pins,
    pods,
    replicaset,
    skipped,
    wait_until,
)
from vllm_remedy.kube.history import templates_equal

rehearsal = pyinfra_run.rehearsal
GOOD_RS = "llama-8b-6b765dc795"  # revision 14's ReplicaSet
CHOSE_14 = ("to revision 14 (llama-8b-6b765dc795) — chosen by rule: newest earlier revision with no evidence "
            "against it")


def big_chunks_die_under_load(rehearsal: Rehearsal) -> None:
    """Revision 15 rolls out and serves, then long prompts kill it under load — and no tool runs meanwhile."""
    def big_chunks(dep: dict) -> None:
        dep["spec"]["template"]["spec"]["containers"][0]["args"] = list(BIG_CHUNKS)

    rehearsal.change(big_chunks, change_cause="bigger prefill chunks for throughput")
    wait_until(lambda: rehearsal.cluster.rolled_out(NS, "llama-8b"), 30, "revision 15 to roll out")
    rehearsal.change(lambda dep: dep["metadata"]["annotations"].update({"sim.vllm-remedy.io/load": LOAD}))
    for pod in pods(rehearsal):
        rehearsal.client().request("DELETE", f"/api/v1/namespaces/{NS}/pods/{pod['metadata']['name']}")
    wait_until(lambda: crash_looping(rehearsal), 30, "OOM under load to crash-loop revision 15's pods")


def test_a_revision_whose_dying_pods_were_deleted_is_skipped_by_its_events(rehearsal: Rehearsal,
                                                                          tmp_path: Path) -> None:
    """S1: 15 dies under load unseen; the bad rollout 16 (Recreate) deletes its pods. 15 is predicted to fit and
    has no record — only its pods' Events speak against it. Restore must go to 14, and record 15's crash."""
    big_chunks_die_under_load(rehearsal)
    # revision 16; Recreate deletes 15's pods first. incident() waits for 16's own pods: 15's crash-loop too and
    # show it while Terminating, before 16 has a pod (restore then rightly saw "no pod is crash-looping")
    incident(rehearsal)
    gone = replicaset(rehearsal, 15)["metadata"]["labels"]["pod-template-hash"]
    assert not [p for p in pods(rehearsal) if p["metadata"]["labels"].get("pod-template-hash") == gone]
    assert "vllm-remedy.io/crashed" not in replicaset(rehearsal, 15)["metadata"]["annotations"]
    good = replicaset(rehearsal, 14)
    inv = no_pins(tmp_path)
    dry = rehearsal.pyinfra(inv, RESTORE, "--dry")
    assert dry.returncode == 0, dry.stderr
    said = host_out(dry.stderr)
    assert "seen crash-looping in its pods' Events (" in skipped(said, 15), said
    assert any(CHOSE_14 in line for line in said), said
    assert "vllm-remedy.io/crashed" not in replicaset(rehearsal, 15)["metadata"]["annotations"]  # --dry wrote none
    got = rehearsal.pyinfra(inv, RESTORE, "-y")
    assert got.returncode == 0, got.stderr
    lines = host_out(got.stderr)
    assert any(CHOSE_14 in line for line in lines), lines
    after = deployment(rehearsal)
    assert templates_equal(after["spec"]["template"], good["spec"]["template"])
    assert after["status"].get("readyReplicas") == 2
    # recorded, so the evidence outlives the Events' hour
    record = json.loads(replicaset(rehearsal, 15)["metadata"]["annotations"]["vllm-remedy.io/crashed"])
    assert record["seen"] == "events"


def test_the_wait_records_the_crash_it_fails_on(rehearsal: Rehearsal, tmp_path: Path) -> None:
    """M3: the operator forces 15 (override) after its Events expired; it crash-loops again. The wait that saw it
    records it on 15's ReplicaSet, so the next run skips 15 for what it was seen doing, not only for a prediction."""
    incident(rehearsal)
    client = rehearsal.client()
    for event in client.request("GET", f"/api/v1/namespaces/{NS}/events")["items"]:  # an hour has passed
        client.request("DELETE", f"/api/v1/namespaces/{NS}/events/{event['metadata']['name']}")
    rehearsal.change(lambda dep: dep["spec"]["template"]["metadata"].setdefault("labels", {}).update(
        {"colleague": "retry"}), change_cause="retry")  # 16: 15 again, pods Recreated; 15's gone unrecorded
    wait_until(lambda: crash_looping(rehearsal, revision=16), 60, "revision 16 to crash-loop")  # not 15's pods
    for event in client.request("GET", f"/api/v1/namespaces/{NS}/events")["items"]:
        client.request("DELETE", f"/api/v1/namespaces/{NS}/events/{event['metadata']['name']}")
    inv = no_pins(tmp_path)
    # our writes to a ReplicaSet are annotations; its resourceVersion also moves with the controller's status updates
    before = replicaset(rehearsal, 16)["metadata"].get("annotations")
    refused = rehearsal.pyinfra(inv, RESTORE, "-y", "--data", "revision=15")
    assert refused.returncode == 2, refused.stderr  # refused before any operation: not even a crash record
    assert replicaset(rehearsal, 16)["metadata"].get("annotations") == before
    assert any(line.startswith("host data revision: revision 15 is not restored: predicted max_len_exceeds_kv on "
                               "NVIDIA-L4") and line.endswith("to restore it anyway, add --data override=evidence")
               for line in host_out(refused.stderr)), refused.stderr
    forced = rehearsal.pyinfra(inv, RESTORE, "-y", "--data", "revision=15", "--data", "override=evidence")
    assert forced.returncode != 0  # 15 crash-loops again: the wait fails fast
    lines = host_out(forced.stderr)
    assert any(line.startswith("warning: forced despite the evidence (override=evidence): predicted "
                               "max_len_exceeds_kv on NVIDIA-L4") for line in lines), lines
    rs15 = replicaset(rehearsal, 17)  # a rollback renumbers the ReplicaSet it reuses
    assert rs15["metadata"]["annotations"]["deployment.kubernetes.io/revision-history"] == "15"
    assert any(f"recorded on replicaset {rs15['metadata']['name']} that it was seen dying (max_len_exceeds_kv)"
               in line for line in lines), lines
    record = json.loads(rs15["metadata"]["annotations"]["vllm-remedy.io/crashed"])
    assert record["failure"] == "max_len_exceeds_kv" and "seen" not in record
    again = rehearsal.pyinfra(inv, RESTORE, "-y")
    assert again.returncode == 0, again.stderr
    lines = host_out(again.stderr)
    assert "dying now" in skipped(lines, 17) and "seen crash-looping (max_len_exceeds_kv) at " in skipped(lines, 16)
    assert any(CHOSE_14 in line for line in lines), lines
    # 15's pods are gone again and its Events too: only the wait's record speaks against it now
    for event in client.request("GET", f"/api/v1/namespaces/{NS}/events")["items"]:
        client.request("DELETE", f"/api/v1/namespaces/{NS}/events/{event['metadata']['name']}")
    refused = rehearsal.pyinfra(inv, RESTORE, "-y", "--data", "revision=17")
    assert refused.returncode == 2, refused.stderr
    assert any("is not restored: seen crash-looping (max_len_exceeds_kv) at " in line
               for line in host_out(refused.stderr)), refused.stderr


def test_a_forced_revision_already_restored_is_nothing_to_do_on_a_rerun(rehearsal: Rehearsal,
                                                                        tmp_path: Path) -> None:
    """L2: after ``--data revision=14`` succeeded (14 now runs as 16), the same command is a no-op, not exit 2."""
    incident(rehearsal)
    inv = no_pins(tmp_path)
    first = rehearsal.pyinfra(inv, RESTORE, "-y", "--data", "revision=14")
    assert first.returncode == 0, first.stderr
    before = deployment(rehearsal)
    again = rehearsal.pyinfra(inv, RESTORE, "-y", "--data", "revision=14")
    assert again.returncode == 0, again.stderr
    assert any("host data revision: 14 is the current revision (renumbered 16 when it was rolled back to)" in line
               for line in host_out(again.stderr)), again.stderr
    assert deployment(rehearsal)["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
