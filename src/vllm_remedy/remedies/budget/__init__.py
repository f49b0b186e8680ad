"""Runbook step 4, "pick the smallest change that restores headroom": a ladder of predicted, safe changes.

``plan_budget(BudgetRequest(model, gpu, settings, policy=..., failure=..., target_concurrency=...)) -> Plan``.

What "smallest" means — the ladder's order, least disruptive first:

1. ``--max-model-len``: set it explicitly to the largest value (≤ the policy's preferred/max, ≤ the model's)
   that fits and meets the target. One flag, no throughput change; only the longest prompts are refused.
2. ``--gpu-memory-utilization``: the value nearest the current one (within policy bounds, never eating the
   headroom margin) that fits — keeps more context than rung 1.
3. ``--max-num-seqs``, then 4. ``--max-num-batched-tokens``: smaller warm-up batches / prefill chunks; never
   below the target concurrency or the policy minimum; batched tokens only with chunked prefill on.
5. ``--kv-cache-dtype fp8``: only where the GPU has fp8 and the policy allows it (after an evaluation).
6. ``--tensor-parallel-size``: sizes dividing the attention heads (and the KV heads evenly or by
   replication), within the policy (its flag bound, and its ``gpu.per_pod`` when it pins a product, as drift's
   gpu-pinned rule holds the pod to that count) and the node's GPU count; the pod's GPU limit changes with it.
7. A bigger GPU product: the policy's products, else the next bigger data-center cards; pins nodeSelector.

A pod whose GPU is not one the policy allows is planned on the policy's GPU with the pin in every rung
(``policy_gpu.plan_within_policy``, what ``plan --policy`` asks; check's fix and deploys/budget.py plan the same).
8. ``--enforce-eager``: only when nothing above fits; marked temporary with the policy's maximum duration.

Every rung starts from the running flags brought inside the policy's bounds: a flag outside them takes the policy's
``preferred`` value when that is safe at the full length (``preferred``: the value the policy says budget writes, often
its known-good unit's), else the nearest bound.

For a CUDA-graph capture OOM, a smaller largest captured batch size (the release's flag; on V0 a smaller
--max-num-seqs, which bounds the sizes V0 captures) comes first, and it
and lower utilization are both kept as alternatives; eager follows as the temporary stopgap.

A KV cache pinned by ``--kv-cache-memory-bytes`` / ``--num-gpu-blocks-override`` that fails is planned without the
flag in every rung; one that starts but holds fewer requests than required gets "unset the pin" as a rung of its own
(``kv-cache-pin``, before utilization, which does not move a pinned cache), kept like any rung only when it buys a
longer max-model-len than the rungs above; one that starts and holds the target is kept.

Each lever is tried alone, then with the longest max-model-len that then fits, then on top of the earlier
flag levers; a rung is listed only if it keeps a longer max-model-len than every rung above it. "Safe"
means the estimator predicts ``fits`` *and* the predicted peak leaves max(0.5 GiB, 3 %) of the card free,
maximum concurrency ≥ target × the policy's confirm ratio with the KV estimate margin taken off the predicted
KV cache (``kv_margin.KV_ESTIMATE_MARGIN``, derived from the held-out error, or the policy's
``budget.kv_margin``), vLLM's argument checks pass, and the quantity behind an observed failure improves.
Nothing predicted to fail is ever proposed.
"""

from vllm_remedy.remedies.budget.levers import tp_sizes
from vllm_remedy.remedies.budget.limits import Limits, limits
from vllm_remedy.remedies.budget.planner import KIND, PRODUCT_LABELS, plan_budget
from vllm_remedy.remedies.budget.request import BudgetRequest

__all__ = ["KIND", "PRODUCT_LABELS", "BudgetRequest", "Limits", "limits", "plan_budget", "tp_sizes"]
