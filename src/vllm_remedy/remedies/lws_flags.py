"""A LeaderWorkerSet's engine flags changed the way a Deployment's are, kept equal in leader and workers (pure).

Why: one vLLM engine spans the group (the leader's ``vllm serve``, workers joining its Ray cluster). Every remedy
plans on the leader's template exactly as on a Deployment's pod template (the planner, the toggle record, the load
caps); :func:`with_leader` then writes that leader into the leaderWorkerTemplate and makes the workers follow: a
worker template that runs a vLLM command line of its own gets the same flag edits (``kube.lws_history`` refuses a
group whose templates disagree on a flag that moves memory), and a GPU pin on the leader is copied to the workers
(``remedies.lws_pin``). A one-template LWS (no ``leaderTemplate``) is its own leader.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from vllm_remedy.errors import UserError
from vllm_remedy.remedies.lws_pin import pinned_lwt
from vllm_remedy.remedies.pin_gpu import gpu_quantity
from vllm_remedy.vllm.catalog import PRODUCT_LABELS
from vllm_remedy.vllm.cmdline import ServerCommand, find_server


def _flag_edits(before: Mapping[str, str], after: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """(flags set, flags removed) turning ``before`` into ``after`` (canonical names, string values)."""
    return {k: v for k, v in after.items() if before.get(k) != v}, [k for k in before if k not in after]


def _product_pin(template: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in (((template.get("spec") or {}).get("nodeSelector")) or {}).items() if k in PRODUCT_LABELS}


def _gpus(template: Mapping[str, Any], resource: str, container: str | None) -> int | None:
    """GPUs per pod the leader's vLLM container asks for (None when it names none)."""
    server = find_server(dict(template.get("spec") or {}), container)
    return gpu_quantity(((server.container.get("resources") or {}).get("limits") or {}).get(resource))


def _worker_server(lwt: Mapping[str, Any]) -> ServerCommand | None:
    """The worker template's vLLM server, as ``kube.lws_history.servers`` finds it; None for workers that only join
    the leader's Ray cluster."""
    try:
        return find_server(dict((lwt.get("workerTemplate") or {}).get("spec") or {}))
    except UserError:
        return None


def with_leader(lwt: Mapping[str, Any], leader: Mapping[str, Any], container: str | None = None,
                resource: str = "nvidia.com/gpu") -> dict[str, Any]:
    """``lwt`` with ``leader`` as the leader's pod template and the workers following it: the vLLM flag edits
    between the old and the new leader made on a worker command line that runs vLLM too, and a changed GPU pin
    (product label, GPUs per pod) copied to the workers."""
    if not lwt.get("leaderTemplate"):
        new = copy.deepcopy(dict(lwt))
        new["workerTemplate"] = copy.deepcopy(dict(leader))
        return new
    old_leader = dict(lwt["leaderTemplate"])
    old_server = find_server(dict(old_leader.get("spec") or {}), container)
    worker_server = _worker_server(lwt)
    new = copy.deepcopy(dict(lwt))
    new["leaderTemplate"] = copy.deepcopy(dict(leader))
    set_, unset = _flag_edits(old_server.flags, find_server(dict(leader.get("spec") or {}), container).flags)
    if worker_server is not None and (set_ or unset):
        edited = worker_server.edit(set_, unset)
        containers = new["workerTemplate"]["spec"]["containers"]
        for i, c in enumerate(containers):
            if c.get("name") == worker_server.container_name:
                containers[i] = edited
    gpus = _gpus(leader, resource, container)
    if (_product_pin(old_leader) != _product_pin(leader) or _gpus(old_leader, resource, container) != gpus) \
            and gpus is not None:
        new = pinned_lwt(new, leader, resource, gpus)
    return new
