"""Which pods the predictions table judges: those the fault and the remedies started, never the pre-game ones.

The runner sets ``fault_at`` before it applies the fault. A loaded run polled in between and recorded game day 3's
healthy 0.7.3 pods (Ready, not yet deleted) as fault-step pods; judged against the nodes the fault had annotated
with 8 GiB held, a row read "predicted unknown, happened ready, agree no"
(test_capture_oom_predictions.py failed so in two of four loaded runs).
"""

from __future__ import annotations

from vllm_remedy.gameday.observe import started_since
from vllm_remedy.kube.annotations import rfc3339

FAULT = 1_741_000_000.4  # cluster time of the last poll when the fault mark was set


def pod(created: str | None) -> dict:
    meta = {"name": "llama-8b-7d787b64d-msxbh"}
    if created is not None:
        meta["creationTimestamp"] = created
    return {"metadata": meta, "spec": {"nodeName": "gpu-l40s-3"}}


def test_a_pod_from_before_the_fault_is_not_the_faults() -> None:
    assert not started_since(pod(rfc3339(FAULT - 125)), FAULT)  # the world step's, two minutes of baseline ago
    assert not started_since(pod(rfc3339(FAULT - 1)), FAULT)


def test_a_pod_created_with_or_after_the_fault_is() -> None:
    assert started_since(pod(rfc3339(FAULT)), FAULT)  # whole seconds: the fault's own second counts
    assert started_since(pod(rfc3339(FAULT + 3)), FAULT)


def test_an_undated_pod_still_counts() -> None:
    assert started_since(pod(None), FAULT)
    assert started_since(pod("not a time"), FAULT)
