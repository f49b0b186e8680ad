"""Runbook step 1 — restore service (≤10 minutes).

    pyinfra inventories/prod.py deploys/restore.py          # shows the diff and the prediction, asks
    pyinfra inventories/prod.py deploys/restore.py --dry    # shows them and stops
    pyinfra inventories/prod.py deploys/restore.py -y       # applies (CronJobs and game days)
    pyinfra inventories/prod.py deploys/restore.py -y --data revision=14   # the operator's target

A crash-looping revision goes back to the newest earlier one nothing speaks against — marked known-good
first, then pinned in policy, then the rest — skipping (and saying why) every revision seen crash-looping,
with no node for its pods, or predicted to fail on the GPU its pods would get now; the output names the
rule that chose. The run waits until it is Ready, failing fast if that one crash-loops too. When no
revision is predicted to serve, the same run applies runbook step 4 (the budget's smallest change) to the
last revision that served. If nothing was deployed and the pods die of OOM under load, load is shed
instead. A healthy Deployment is left alone.

The fallback is temporary: the last step shifts the traffic back once every pod of the primary has been
Ready for the policy's ``fallback.shift_back_after`` (default ``confirm.stable_for``). Until then it says
when; re-run this deploy then (step 6, deploys/confirm.py, refuses to confirm while the fallback serves).
"""

from pyinfra import host

from vllm_remedy.operations import (
    evidence,
    handover,
    inferenceservice,
    leaderworkerset,
    lws_eager,
    lws_evidence,
    restore,
    statefulset,
    sts_evidence,
    workload,
)

if host.data.get("k8s_kind") == "leaderworkerset":
    revision = leaderworkerset.forced_revision()  # as for a Deployment: bad input stops here, one line, exit 2

    lws_evidence.crash_recorded(name="Record crash-looping revisions on their ControllerRevisions")
    # no `kubectl rollout undo` for an LWS: the chosen ControllerRevision written back, resourceVersion-guarded
    leaderworkerset.rollback(name="Roll a crash-looping LeaderWorkerSet back to the newest good revision", wait=True,
                             revision=revision)
    # after the rollback, not before: it plans on the set as read, so --dry would show a diff -y never makes;
    # the revert plans on what the rollback leaves (a restored template without the flag has no toggle left)
    lws_eager.revert_expired_toggles(name="Revert expired temporary toggles", wait=True)
elif host.data.get("k8s_kind") == "statefulset":
    revision = statefulset.forced_revision()  # as for a Deployment: bad input stops here, one line, exit 2

    sts_evidence.crash_recorded(name="Record crash-looping revisions on their ControllerRevisions")
    # chosen by evidence like a Deployment's; pods the controller will not replace are deleted only by policy
    statefulset.rollback(name="Roll a crash-looping StatefulSet back to the newest good revision", wait=True,
                         revision=revision)
    # after the rollback for the same reason as a LeaderWorkerSet's (it plans on the set as read); then its wait
    workload.revert_expired_toggles(name="Revert expired temporary toggles")
    workload.rolled_out(name="Wait until the new pods are Ready")
elif host.data.get("k8s_kind") == "inferenceservice":
    inferenceservice.no_forced_revision()  # --data revision is refused for this kind: one line, exit 2
    # KServe's last ready predictor revision written back into the InferenceService (never its Deployment)
    inferenceservice.rollback(name="Roll an InferenceService back to its last ready predictor revision", wait=True)
else:
    revision = restore.forced_revision()  # host data revision; bad input stops here: one line, exit 2

    workload.revert_expired_toggles(name="Revert expired temporary toggles")
    evidence.crash_recorded(name="Record crash-looping revisions on their ReplicaSets")
    restore.known_good(name="Roll back a crash-looping revision to the last known-good one", wait=True,
                       revision=revision)
    restore.shed_load(name="Shed load when OOM under load and nothing was deployed", fallback=True,
                      revision=revision)
    handover.budget_handover(name="Budget's smallest change when no revision is predicted to serve",
                             revision=revision)
    # A rerun after the first run died mid-wait (kill -9, a lost terminal) resumes waiting for that rollout.
    workload.rolled_out(name="Wait until the new pods are Ready")
    restore.shift_back(name="Shift traffic back from the fallback once the primary is stable")
