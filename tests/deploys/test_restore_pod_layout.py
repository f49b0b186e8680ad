"""deploys/restore.py never rolls back to a revision whose pod cannot hold its engine, through the real pyinfra CLI on
the rehearsal cluster (the runbook: restore by evidence; the memory model's verdict is evidence).

History: 14 good (the seed); the runbook's incident, crash-looping on the L4 pool; then a ReplicaSet of revision 16,
revision 14 with ``--tensor-parallel-size 2`` on ``limits nvidia.com/gpu: 1`` whose pods are long gone and of which
nothing of ours was recorded (written as the controller leaves an old revision: scaled to 0, owned by the Deployment).
The Deployment controller then renumbers the incident's ReplicaSet 17, as Kubernetes does for a current ReplicaSet
below the newest revision. vLLM refuses 16 ("World size (2) is larger than the number of available GPUs (1)"), but
predict_template split the model over two ranks and predicted "fits", so restore rolled back to 16. Now 16 is skipped,
saying why, and 14 is chosen."""

from __future__ import annotations

import copy
from pathlib import Path

from fixtures import pyinfra_run
from fixtures.pyinfra_run import Rehearsal
from fixtures.restore_world import (
    NS,
    RESTORE,
    deployment,
    host_out,
    incident,
    no_pins,
    replicaset,
    skipped,
    vllm_runtime,
    wait_until,
)
from vllm_remedy.kube.history import templates_equal

rehearsal = pyinfra_run.rehearsal
TP2_HASH = "7c9f5d6b8d"
WHY = ("predicted world_size_exceeds_gpus: world size 2 (TP 2 × PP 1) is larger than the 1 GPU(s) of the pod "
       "(nvidia.com/gpu: 1)")


def _tp2_revision_16(rehearsal: Rehearsal) -> None:
    """Revision 14's ReplicaSet as a TP 2 revision 16, scaled to 0 (what the controller leaves of an old revision)."""
    good = replicaset(rehearsal, 14)
    rs = copy.deepcopy(good)
    meta = rs["metadata"]
    for key in ("uid", "resourceVersion", "creationTimestamp", "managedFields", "generation"):
        meta.pop(key, None)
    rs.pop("status", None)
    meta["name"] = f"llama-8b-{TP2_HASH}"
    meta["annotations"] = {**meta.get("annotations", {}), "deployment.kubernetes.io/revision": "16",
                           "kubernetes.io/change-cause": "tensor parallel 2"}
    for labels in (meta["labels"], rs["spec"]["selector"]["matchLabels"], rs["spec"]["template"]["metadata"]["labels"]):
        labels["pod-template-hash"] = TP2_HASH
    rs["spec"]["replicas"] = 0
    rs["spec"]["template"]["spec"]["containers"][0]["args"] += ["--tensor-parallel-size", "2"]
    client = rehearsal.client()
    client.request("POST", client.object_path(NS, "replicasets"), body=rs)


def test_restore_skips_a_revision_whose_pod_cannot_hold_its_engine(rehearsal: Rehearsal, tmp_path: Path) -> None:
    vllm_runtime(rehearsal)
    incident(rehearsal)  # revision 15
    _tp2_revision_16(rehearsal)
    revision = "deployment.kubernetes.io/revision"
    wait_until(lambda: deployment(rehearsal)["metadata"]["annotations"].get(revision) == "17", what="17")
    good = replicaset(rehearsal, 14)["spec"]["template"]
    inventory = no_pins(tmp_path)
    dry = host_out(rehearsal.pyinfra(inventory, RESTORE, "--dry").stderr)
    assert WHY in skipped(dry, 16), dry
    got = rehearsal.pyinfra(inventory, RESTORE, "-y")
    assert got.returncode == 0, got.stderr
    lines = host_out(got.stderr)
    assert "from revision 17 to revision 14 (" in " ".join(lines), lines
    assert WHY in skipped(lines, 16), lines
    assert templates_equal(deployment(rehearsal)["spec"]["template"], good)


def test_override_evidence_never_forces_a_revision_vllm_refuses(rehearsal: Rehearsal, tmp_path: Path) -> None:
    """``--data revision=16 --data override=evidence``: the operator overrules evidence, not vLLM. 16's world size
    exceeds its pod's GPUs, so --dry, the prompt and -y each print one refusal line, exit non-zero and change nothing
    (it was planned as a rollback with a warning)."""
    vllm_runtime(rehearsal)
    incident(rehearsal)  # revision 15
    _tp2_revision_16(rehearsal)
    wait_until(lambda: deployment(rehearsal)["metadata"]["annotations"].get(
        "deployment.kubernetes.io/revision") == "17", what="17")
    before = deployment(rehearsal)
    inventory = no_pins(tmp_path)
    forced = ("--data", "revision=16", "--data", "override=evidence")
    for args, stdin in ((["--dry"], None), ([], "\n"), (["-y"], None)):
        got = rehearsal.pyinfra(inventory, RESTORE, *args, *forced, stdin=stdin)
        said = [line for line in host_out(got.stderr) if line and line != "Connected"]
        assert got.returncode != 0, (args, got.stderr)
        assert len(said) == 1, (args, said)
        assert said[0].startswith(f"host data revision: revision 16 is not restored: it cannot start ({WHY}"), said
        assert said[0].endswith("; name another revision") and "override" not in said[0], said  # none offered
        after = deployment(rehearsal)  # its status moves with the crash-looping pods; nothing of ours does
        assert (after["spec"], after["metadata"]["annotations"]) == (before["spec"], before["metadata"]["annotations"])
