"""deploys/restore.py (runbook step 1) through the real pyinfra CLI against the rehearsal cluster."""

from __future__ import annotations

from fixtures import pyinfra_run
from fixtures.dry_run import dry_then_apply
from fixtures.kube_writes import mark_known_good
from fixtures.pyinfra_run import Rehearsal, detected_changes
from fixtures.restore_world import (
    HOST,
    LOCAL,
    NAME,
    NS,
    RESTORE,
    host_out,
    incident,
    pods,
    replicaset,
    settled,
    vllm_runtime,
)
from vllm_remedy.kube.history import templates_equal

rehearsal = pyinfra_run.rehearsal

PREDICTION = ("prediction on NVIDIA-L40S: fits — KV cache 197,840 tokens, maximum concurrency 12.08x "
              "at max-model-len 16384")


def test_incident_rolls_back_to_the_good_revision_and_waits_until_ready(rehearsal: Rehearsal) -> None:
    incident(rehearsal)
    good = replicaset(rehearsal, 14)
    _dry, got = dry_then_apply(rehearsal, LOCAL, RESTORE, expect_diffs=1)
    assert got.returncode == 0, got.stderr
    lines = host_out(got.stderr)
    summary = ("roll back deployment llm/llama-8b from revision 15 to revision 14 (llama-8b-6b765dc795) — chosen by "
               "rule: pinned in policy")
    assert good["metadata"]["name"] == "llama-8b-6b765dc795"
    assert any(line.startswith(summary + ": written (resourceVersion ") for line in lines), lines
    waited = [line for line in lines if line.startswith("wait for revision 14's template to roll out: ")]
    assert len(waited) == 1 and 'deployment "llama-8b" successfully rolled out after' in waited[0], lines
    seconds = int(waited[0].rsplit(" after ", 1)[1].split("s ")[0])
    # The rollout takes the simulator's 72 s weight load and more (the Recreate stop, the readiness probe): ~110 s on
    # the wait's clock, which starts at the wait's first Date reading, after the write that started the rollout. A
    # deploy process kept off the CPU for 75 ms loses 45 cluster seconds of it at 600x (seen: 67 s on a machine at
    # load 11); a wait that did not wait for the load reads a few seconds. Half the load tells them apart.
    assert seconds >= 72 / 2, waited
    after = rehearsal.client().get_deployment(NS, NAME)
    assert templates_equal(after["spec"]["template"], good["spec"]["template"])
    notes = after["metadata"]["annotations"]
    assert notes["kubernetes.io/change-cause"] == ("vllm-remedy restore: roll back to revision 14 (pinned in policy): "
                                                   "revision 15 crash-looped")
    assert notes["vllm-remedy.io/last-action"] == "restore"
    live = [p for p in pods(rehearsal) if not p["metadata"].get("deletionTimestamp")]
    assert len(live) == 2
    assert all(p["spec"]["nodeName"].startswith("gpu-l40s-") for p in live)
    assert all(c["ready"] for p in live for c in p["status"]["containerStatuses"])


def test_second_run_changes_nothing(rehearsal: Rehearsal) -> None:
    incident(rehearsal)
    first = rehearsal.pyinfra(LOCAL, RESTORE, "-y")
    assert first.returncode == 0, first.stderr
    before = rehearsal.client().get_deployment(NS, NAME)
    again = rehearsal.pyinfra(LOCAL, RESTORE, "-y")
    assert again.returncode == 0, again.stderr
    # revert toggles, record crashes, roll back, shed load, budget handover, wait, shift back
    assert host_out(again.stderr).count("No changes") == 7
    after = rehearsal.client().get_deployment(NS, NAME)
    assert after["metadata"]["generation"] == before["metadata"]["generation"]
    assert after["metadata"]["annotations"] == before["metadata"]["annotations"]


def test_dry_shows_the_diff_and_prediction_once_and_changes_nothing(rehearsal: Rehearsal) -> None:
    incident(rehearsal)
    bad = settled(rehearsal)
    got = rehearsal.pyinfra(LOCAL, RESTORE, "--dry")
    assert got.returncode == 0, got.stderr
    said = host_out(got.stderr)
    assert "noop: no temporary toggle has expired" in said  # the first operation says why it does nothing
    lines = [line for line in said if not line.startswith("noop: ")]
    assert lines.count(PREDICTION) == 1, lines
    assert "--- deployment llm/llama-8b template (current)" in lines
    assert "+++ deployment llm/llama-8b template (planned)" in lines
    for change in ("+    - --max-model-len", "+    - '16384'", "-    cloud.google.com/gke-accelerator: nvidia-l4",
                   "+    nvidia.com/gpu.product: NVIDIA-L40S", "-  tolerations:"):
        assert change in lines, (change, lines)
    # the dry run shows every write: first the crash record on revision 15's ReplicaSet, then the rollback
    assert lines[1] == (f"record on replicaset {replicaset(rehearsal, 15)['metadata']['name']} (revision 15) that "
                        "it was seen dying (2 pod(s) max_len_exceeds_kv)")
    assert lines[2] == ("revision 15 crash-loops (2 pod(s) max_len_exceeds_kv); roll back to revision 14 (pinned in "
                        "policy: revision 14 (llama-8b-6b765dc795) matches a known-good unit in the policy)")
    after = rehearsal.client().get_deployment(NS, NAME)
    assert after["metadata"]["resourceVersion"] == bad["metadata"]["resourceVersion"]


def test_a_known_good_mark_wins_over_the_newest_earlier_revision(rehearsal: Rehearsal) -> None:
    incident(rehearsal)
    client = rehearsal.client()
    marked = replicaset(rehearsal, 13)
    mark_known_good(client, NS, marked["metadata"]["name"], at=client.server_time(), reason="confirmed in a test")
    got = rehearsal.pyinfra(LOCAL, RESTORE, "-y")
    assert got.returncode == 0, got.stderr
    summary = (f"roll back deployment llm/llama-8b from revision 15 to revision 13 ({marked['metadata']['name']}) — "
               "chosen by rule: known-good mark")
    assert any(line.startswith(summary + ": written") for line in host_out(got.stderr)), got.stderr
    after = client.get_deployment(NS, NAME)
    assert templates_equal(after["spec"]["template"], marked["spec"]["template"])
    assert "vllm-remedy.io/known-good" not in after["metadata"]["annotations"]  # never copied onto the Deployment


def test_healthy_deployment_yields_no_commands(rehearsal: Rehearsal) -> None:
    vllm_runtime(rehearsal)
    before = rehearsal.client().get_deployment(NS, NAME)
    got = rehearsal.pyinfra(LOCAL, RESTORE, "--dry")
    assert got.returncode == 0, got.stderr
    assert f"[{HOST}]" in got.stderr
    assert not [line for line in host_out(got.stderr) if line.startswith(("roll back", "shed load", "---"))]
    assert detected_changes(got.stderr) == {"Revert expired temporary toggles": ("-", "-"),
                                            "Record crash-looping revisions on their ReplicaSets": ("-", "-"),
                                            "Roll back a crash-looping revision to the last known-good one": ("-", "-"),
                                            "Shed load when OOM under load and nothing was deployed": ("-", "-"),
                                            "Budget's smallest change when no revision is predicted to serve":
                                                ("-", "-"),
                                            "Wait until the new pods are Ready": ("-", "-"),
                                            "Shift traffic back from the fallback once the primary is stable":
                                                ("-", "-")}
    after = rehearsal.client().get_deployment(NS, NAME)
    assert after["metadata"]["generation"] == before["metadata"]["generation"]
