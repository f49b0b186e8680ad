"""Runbook step 5 — OOM under load: cap what one engine step may take on, per policy ``load_shedding``.

    pyinfra inventories/prod.py deploys/load_guard.py --dry
    pyinfra inventories/prod.py deploys/load_guard.py -y

``--max-num-batched-tokens`` caps the prefill chunk, ``--limit-mm-per-prompt`` the images per request
of multimodal models (in the running version's syntax), ``--max-loras`` the resident LoRA adapters.
Values are only ever lowered; only flags that change are written. The maximum prompt length is the
gateway's to enforce (policy ``load_shedding.max_prompt_tokens``).
"""

from pyinfra import host

from vllm_remedy.operations import (
    evidence,
    kinds,
    load_guard,
    lws_eager,
    lws_evidence,
    lws_flags,
    sts_evidence,
    workload,
)

if host.data.get("k8s_kind") == "leaderworkerset":
    lws_eager.revert_expired_toggles(name="Revert expired temporary toggles")
    lws_evidence.crash_recorded(name="Record crash-looping revisions on their ControllerRevisions")
    lws_flags.caps(name="Cap load per policy, leader and workers")
    lws_flags.rolled_out(name="Wait until every group is Ready")
elif host.data.get("k8s_kind") == "statefulset":
    workload.revert_expired_toggles(name="Revert expired temporary toggles")
    sts_evidence.crash_recorded(name="Record crash-looping revisions on their ControllerRevisions")
    load_guard.caps(name="Cap load per policy")
    workload.rolled_out(name="Wait until the new pods are Ready")
elif not kinds.handles("deployment"):  # a namespace host expands to every kind: refuse the others in one line
    kinds.unsupported(name="Cap load per policy", what="the load caps")
else:
    workload.revert_expired_toggles(name="Revert expired temporary toggles")
    evidence.crash_recorded(name="Record crash-looping revisions on their ReplicaSets")
    load_guard.caps(name="Cap load per policy")  # the policy's load_shedding caps
    workload.rolled_out(name="Wait until the new pods are Ready")
