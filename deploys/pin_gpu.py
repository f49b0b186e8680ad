"""Runbook step 4 — pin the GPU type so scheduling cannot pick a smaller card.

    pyinfra inventories/prod.py deploys/pin_gpu.py --dry
    pyinfra inventories/prod.py deploys/pin_gpu.py -y

nodeSelector on the policy's product (under the policy's ``gpu.label``: GPU feature discovery, GKE or
Karpenter; ``-SHARED``/MIG variants handled) and ``limits: nvidia.com/gpu``. Refused when no schedulable
node of that product can take a pod; on full GPU nodes a Deployment's rollout switches to maxSurge 0 /
maxUnavailable 1, and the diff says so (a StatefulSet deletes each pod before creating its successor: no switch).
"""

from pyinfra import host

from vllm_remedy.operations import evidence, kinds, lws_eager, lws_flags, lws_pin, pin_gpu, sts_evidence, workload

if host.data.get("k8s_kind") == "leaderworkerset":
    # the pin before the revert (as lws_budget.FIX): it plans on the set as read, the revert on what the pin leaves
    lws_pin.gpu_product(name="Pin the GPU type of leader and workers", product=host.data.get("gpu_product"),
                        wait=False)
    lws_eager.revert_expired_toggles(name="Revert expired temporary toggles")
    lws_flags.rolled_out(name="Wait until every group is Ready")
elif host.data.get("k8s_kind") == "statefulset":  # no surge to switch off: it deletes a pod before creating one
    workload.revert_expired_toggles(name="Revert expired temporary toggles")
    sts_evidence.crash_recorded(name="Record crash-looping revisions on their ControllerRevisions")
    pin_gpu.gpu_product(name="Pin the GPU type", product=host.data.get("gpu_product"))
    workload.rolled_out(name="Wait until the new pods are Ready")
elif not kinds.handles("deployment"):  # a namespace host expands to every kind: refuse the others in one line
    kinds.unsupported(name="Pin the GPU type", what="pinning the GPU type")
else:
    workload.revert_expired_toggles(name="Revert expired temporary toggles")
    evidence.crash_recorded(name="Record crash-looping revisions on their ReplicaSets")
    pin_gpu.gpu_product(name="Pin the GPU type", product=host.data.get("gpu_product"))  # None: the policy's product
    workload.rolled_out(name="Wait until the new pods are Ready")
