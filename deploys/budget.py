"""Runbook step 4 — fix the memory budget: the smallest change that restores headroom.

    pyinfra inventories/prod.py deploys/budget.py          # shows the diff and the prediction, asks
    pyinfra inventories/prod.py deploys/budget.py --dry    # shows them and stops
    pyinfra inventories/prod.py deploys/budget.py -y       # applies and waits until Ready

The GPU type is pinned first (so scheduling cannot pick a smaller card), then the planner's smallest
predicted-safe change is applied for that card — with ``--max-model-len`` always explicit. A change the
memory model predicts to fail is refused with one line naming the prediction.
"""

from pyinfra import host

from vllm_remedy.operations import budget, scheduling, vllm
from vllm_remedy.policy import Policy

policy = host.connector.policy or Policy()  # the connector loaded host data's policy file

vllm.revert_expired_toggles(name="Revert expired temporary toggles")
scheduling.gpu_product(name="Pin the GPU type", product=policy.gpu_product, gpus=policy.gpu.per_pod)
budget.smallest_fix(name="Smallest change that restores headroom", gpu=policy.gpu_product)
vllm.rolled_out(name="Wait until the new pods are Ready")
