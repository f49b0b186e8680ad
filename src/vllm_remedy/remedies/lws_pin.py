"""Pinning a LeaderWorkerSet: the leader's template is pinned as a Deployment's is, the workers follow it (pure).

Why both: the group's pods form one engine over Ray, so a worker left free to land on a smaller card breaks
the same start the leader's pin protects (each GPU holds 1/(TP×PP) of the model). Workers usually run no vLLM
command line of their own (they join the leader's Ray cluster), so they take the leader's GPU product
nodeSelector and the same GPUs per pod on the containers that request GPUs.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from vllm_remedy.remedies.pin_gpu import gpu_quantity
from vllm_remedy.vllm.catalog import PRODUCT_LABELS


def pin_worker(worker: Mapping[str, Any], leader: Mapping[str, Any], resource: str, gpus: int) -> dict[str, Any]:
    """``worker`` with the pinned ``leader``'s GPU-product nodeSelector and ``gpus`` of ``resource`` per GPU container
    (those that request ``resource``; the first container when none does)."""
    new = copy.deepcopy(dict(worker))
    spec = new.setdefault("spec", {})
    pinned = {k: v for k, v in ((leader.get("spec") or {}).get("nodeSelector") or {}).items() if k in PRODUCT_LABELS}
    selector = {k: v for k, v in (spec.get("nodeSelector") or {}).items() if k not in PRODUCT_LABELS}
    spec["nodeSelector"] = {**selector, **pinned}
    containers = spec.get("containers") or []
    holders = [c for c in containers if any(resource in ((c.get("resources") or {}).get(part) or {})
                                            for part in ("limits", "requests"))] or containers[:1]
    for c in holders:
        res = c.setdefault("resources", {})
        limits = res.setdefault("limits", {})
        if gpu_quantity(limits.get(resource)) != gpus:
            limits[resource] = str(gpus)
        requests = res.get("requests") or {}
        if resource in requests and gpu_quantity(requests[resource]) != gpus:
            requests[resource] = str(gpus)
    return new


def pinned_lwt(lwt: Mapping[str, Any], leader: Mapping[str, Any], resource: str, gpus: int) -> dict[str, Any]:
    """The leaderWorkerTemplate with ``leader`` (already pinned) and its workers following it."""
    new = copy.deepcopy(dict(lwt))
    if new.get("leaderTemplate"):
        new["leaderTemplate"] = copy.deepcopy(dict(leader))
        new["workerTemplate"] = pin_worker(new.get("workerTemplate") or {}, leader, resource, gpus)
    else:  # one template for the leader and the workers: it runs vLLM and was pinned as the leader's
        new["workerTemplate"] = copy.deepcopy(dict(leader))
    return new
