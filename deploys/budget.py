"""Runbook step 4 — fix the memory budget: the smallest change that restores headroom.

    pyinfra inventories/prod.py deploys/budget.py          # shows the diff and the prediction, asks
    pyinfra inventories/prod.py deploys/budget.py --dry    # shows them and stops
    pyinfra inventories/prod.py deploys/budget.py -y       # applies and waits until Ready

The GPU type is pinned first (so scheduling cannot pick a smaller card), then the planner's smallest
predicted-safe change is applied for that card — with ``--max-model-len`` always explicit. A change the
memory model predicts to fail is refused with one line naming the prediction.
"""

from pyinfra import host

from vllm_remedy.operations import (
    budget,
    evidence,
    inferenceservice,
    lws_budget,
    lws_evidence,
    lws_flags,
    sts_evidence,
    workload,
)

# Revert expired temporary toggles, pin the GPU type, the smallest change that restores headroom — every value
# from the host's policy (host data ``policy``). One list, budget.FIX, which `vllm-remedy drift` plans as its fix.
if host.data.get("k8s_kind") == "leaderworkerset":
    # the same steps on the leader's template, the workers following it, one guarded write of leaderWorkerTemplate each
    lws_evidence.crash_recorded(name="Record crash-looping revisions on their ControllerRevisions")
    for name, operation, arguments in lws_budget.FIX:
        operation(name=name, **arguments)
    lws_flags.rolled_out(name="Wait until every group is Ready")
elif host.data.get("k8s_kind") == "statefulset":  # the Deployment's operations on spec.template; its own wait
    sts_evidence.crash_recorded(name="Record crash-looping revisions on their ControllerRevisions")
    for name, operation, arguments in budget.FIX:
        operation(name=name, **arguments)
    workload.rolled_out(name="Wait until the new pods are Ready")
elif host.data.get("k8s_kind") == "inferenceservice":
    # the planner's flag change written into the InferenceService's predictor (never KServe's Deployment)
    inferenceservice.smallest_fix(name="Smallest flag change that restores headroom", wait=True)
else:
    evidence.crash_recorded(name="Record crash-looping revisions on their ReplicaSets")
    for name, operation, arguments in budget.FIX:
        operation(name=name, **arguments)
    workload.rolled_out(name="Wait until the new pods are Ready")
