"""Runbook step 6 — confirm: Ready and stable, KV capacity above peak, metrics normal; then mark known-good.

    pyinfra inventories/prod.py deploys/confirm.py -y

On success the current revision carries ``vllm-remedy.io/known-good`` (what ``restore`` rolls back to first): a
Deployment's ReplicaSet, with ``vllm-remedy.io/deployment-fields`` (the strategy and rollout settings it was
confirmed with, which ``restore`` puts back); a StatefulSet's or LeaderWorkerSet's ControllerRevision, where their
restore reads it. A second run changes nothing. On failure the host fails with the reasons and nothing is marked.
"""

from vllm_remedy.operations import (
    confirm,
    evidence,
    kinds,
    lws_eager,
    lws_evidence,
    set_confirm,
    sts_evidence,
    workload,
)

if kinds.handles("statefulset", "leaderworkerset"):
    # As for a Deployment: an expired toggle comes off first; a revision seen dying loses its mark.
    if kinds.handles("statefulset"):
        workload.revert_expired_toggles(name="Revert expired temporary toggles")
        sts_evidence.crash_recorded(name="Record crash-looping revisions on their ControllerRevisions")
    else:
        lws_eager.revert_expired_toggles(name="Revert expired temporary toggles")
        lws_evidence.crash_recorded(name="Record crash-looping revisions on their ControllerRevisions")
    set_confirm.rolled_out(name="Wait until the new pods are Ready")
    set_confirm.marked_known_good(name="Confirm and mark the running revision known-good")
elif not kinds.handles("deployment"):  # a namespace host expands to every kind: refuse the others in one line
    kinds.unsupported(name="Confirm and mark the running revision known-good",
                      what="confirming and marking known-good")
else:
    # A temporary toggle past its expiry is not a state to bless: revert it and let the rollout finish first.
    workload.revert_expired_toggles(name="Revert expired temporary toggles")
    # A revision seen dying loses its mark here too (restore must not return to it); a confirmed one keeps it.
    evidence.crash_recorded(name="Record crash-looping revisions on their ReplicaSets")
    workload.rolled_out(name="Wait until the new pods are Ready")
    confirm.marked_known_good(name="Confirm and mark the running revision known-good")
