"""Runbook step 4's stop-gap — ``--enforce-eager`` as a timed toggle that reverts itself.

    pyinfra inventories/prod.py deploys/enforce_eager.py -y                          # on, policy's max ttl
    pyinfra inventories/prod.py deploys/enforce_eager.py -y --data eager_ttl=30m     # on for 30 minutes
    pyinfra inventories/prod.py deploys/enforce_eager.py -y --data enforce_eager=false  # off now

The expiry (RFC 3339, cluster time) and the exact prior argv are stored on the Deployment or StatefulSet; any later
run of any deploy reverts it once expired. A ttl above the policy's ``enforce_eager.max_duration`` is
refused. Eager mode costs throughput and latency: plan the real fix before it expires.
"""

from pyinfra import host

from vllm_remedy.operations import (
    enforce_eager,
    evidence,
    kinds,
    lws_eager,
    lws_evidence,
    lws_flags,
    sts_evidence,
    workload,
)

enabled = str(host.data.get("enforce_eager", True)).lower() not in ("false", "0", "no", "off")

if host.data.get("k8s_kind") == "leaderworkerset":
    # recorded on the LeaderWorkerSet; leader and workers switch together, in one write of leaderWorkerTemplate
    lws_eager.revert_expired_toggles(name="Revert expired temporary toggles")
    lws_evidence.crash_recorded(name="Record crash-looping revisions on their ControllerRevisions")
    lws_eager.toggle(name="Temporary eager mode" if enabled else "Eager mode off", enabled=enabled,
                     ttl=host.data.get("eager_ttl"))
    lws_flags.rolled_out(name="Wait until every group is Ready")
elif host.data.get("k8s_kind") == "statefulset":  # the toggle's record on the StatefulSet, as on a Deployment
    workload.revert_expired_toggles(name="Revert expired temporary toggles")
    sts_evidence.crash_recorded(name="Record crash-looping revisions on their ControllerRevisions")
    enforce_eager.toggle(name="Temporary eager mode" if enabled else "Eager mode off", enabled=enabled,
                         ttl=host.data.get("eager_ttl"))
    workload.rolled_out(name="Wait until the new pods are Ready")
elif not kinds.handles("deployment"):  # a namespace host expands to every kind: refuse the others in one line
    kinds.unsupported(name="Temporary eager mode", what="the timed --enforce-eager toggle")
else:
    workload.revert_expired_toggles(name="Revert expired temporary toggles")
    evidence.crash_recorded(name="Record crash-looping revisions on their ReplicaSets")
    enforce_eager.toggle(name="Temporary eager mode" if enabled else "Eager mode off", enabled=enabled,
                         ttl=host.data.get("eager_ttl"))
    workload.rolled_out(name="Wait until the new pods are Ready")
