"""LeaderWorkerSet revision history, rollback and flag consistency, over its ControllerRevisions (pure).

An LWS records each ``spec.leaderWorkerTemplate`` in a ControllerRevision labelled with the set's name and
a ``template-revision-hash`` that its pods carry too. kubectl has no ``rollout undo`` for it, so a rollback is
kubectl's StatefulSet undo done by hand: take the second-highest revision the set controls, and replace
``spec.leaderWorkerTemplate`` with its data, guarded by resourceVersion. Multi-node vLLM runs one engine over
the group (the leader's ``vllm serve``, workers joining its Ray cluster); when a worker template carries vLLM
flags too, the two must agree on every flag that moves memory, else the group's pods disagree on the engine.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vllm_remedy.errors import UserError
from vllm_remedy.kube.errors import RolloutError
from vllm_remedy.kube.history import CHANGE_CAUSE, Revision, annotations, is_controlled_by, templates_equal
from vllm_remedy.kube.rollout import resource_version_test
from vllm_remedy.vllm.cmdline import ServerCommand, find_server
from vllm_remedy.vllm.parallel import node_only, parallel_sizes, world_size_words
from vllm_remedy.vllm.versions import parse_version, rules, version_from_image

PREFIX = "leaderworkerset.sigs.k8s.io/"
NAME_LABEL, REVISION_LABEL = PREFIX + "name", PREFIX + "template-revision-hash"
GROUP_LABEL, WORKER_LABEL = PREFIX + "group-index", PREFIX + "worker-index"
#: Flags every pod of one engine must share: they size weights, KV cache and the parallel split.
MEMORY_FLAGS = ("max-model-len", "gpu-memory-utilization", "tensor-parallel-size", "pipeline-parallel-size",
                "max-num-seqs", "max-num-batched-tokens", "kv-cache-dtype", "dtype", "quantization", "block-size",
                "enforce-eager", "revision")


def revision_lwt(rev: Mapping[str, Any]) -> dict[str, Any]:
    """The leaderWorkerTemplate a ControllerRevision records (its ``data`` replaces it whole)."""
    lwt = copy.deepcopy(((rev.get("data") or {}).get("spec") or {}).get("leaderWorkerTemplate") or {})
    lwt.pop("$patch", None)
    return lwt


def lwt_of(lws: Mapping[str, Any]) -> dict[str, Any]:
    """``spec.leaderWorkerTemplate`` ({} if absent)."""
    return dict((lws.get("spec") or {}).get("leaderWorkerTemplate") or {})


def lwts_equal(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Equal once each pod template is compared as kubectl compares templates, the rest as written."""
    keys = ("leaderTemplate", "workerTemplate")
    if any(not templates_equal(a.get(k), b.get(k)) for k in keys):
        return False
    rest = ({k: v for k, v in a.items() if k not in keys}, {k: v for k, v in b.items() if k not in keys})
    return rest[0] == rest[1]


def leader_template(lwt: Mapping[str, Any]) -> dict[str, Any]:
    """The leader's pod template: ``leaderTemplate``, else the worker template (the LWS default)."""
    return dict(lwt.get("leaderTemplate") or lwt.get("workerTemplate") or {})


def controlled_revisions(lws: Mapping[str, Any], revisions: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """ControllerRevisions labelled with the set's name and controlled by it, by revision number."""
    name = (lws.get("metadata") or {}).get("name")
    out = [dict(r) for r in revisions
           if ((r.get("metadata") or {}).get("labels") or {}).get(NAME_LABEL) == name and is_controlled_by(r, lws)]
    return sorted(out, key=lambda r: int(r.get("revision") or 0))


def update_hash(lws: Mapping[str, Any], revisions: Sequence[Mapping[str, Any]]) -> str:
    """The template-revision-hash of the set's current template ("" before its controller has recorded it)."""
    current = lwt_of(lws)
    same = [r for r in controlled_revisions(lws, revisions) if lwts_equal(revision_lwt(r), current)]
    return str(((same[-1].get("metadata") or {}).get("labels") or {}).get(REVISION_LABEL, "")) if same else ""


def lws_history(lws: Mapping[str, Any], revisions: Sequence[Mapping[str, Any]]) -> list[Revision]:
    """One Revision per number, ascending, as ``kubectl rollout history`` would show a StatefulSet's."""
    current = update_hash(lws, revisions)
    out: dict[int, Revision] = {}
    for rev in controlled_revisions(lws, revisions):
        meta = rev["metadata"]
        out[int(rev.get("revision") or 0)] = Revision(
            number=int(rev.get("revision") or 0), replicaset=meta["name"],
            change_cause=annotations(rev).get(CHANGE_CAUSE, ""), template=leader_template(revision_lwt(rev)),
            annotations=annotations(rev), created=meta.get("creationTimestamp") or "", replicas=0,
            current=(meta.get("labels") or {}).get(REVISION_LABEL) == current)
    return [out[n] for n in sorted(out)]


@dataclass(frozen=True)
class LwsUndoPlan:
    """What the rollback will do; ``patch`` (a guarded JSON patch) is empty when the template is already in place."""

    revision: int
    controller_revision: str
    skipped: bool
    patch: list[dict[str, Any]]
    lwt: dict[str, Any]


def plan_undo(lws: Mapping[str, Any], revisions: Sequence[Mapping[str, Any]]) -> LwsUndoPlan:
    """The previous revision's template written back to ``spec.leaderWorkerTemplate``, guarded by resourceVersion."""
    owned = controlled_revisions(lws, revisions)
    if len(owned) <= 1:
        raise RolloutError("no last revision to roll back to")
    target = owned[-2]
    lwt = revision_lwt(target)
    common = {"revision": int(target["revision"]), "controller_revision": target["metadata"]["name"], "lwt": lwt}
    if lwts_equal(lwt, lwt_of(lws)):
        return LwsUndoPlan(**common, skipped=True, patch=[])
    patch = [resource_version_test(lws), {"op": "replace", "path": "/spec/leaderWorkerTemplate", "value": lwt}]
    return LwsUndoPlan(**common, skipped=False, patch=patch)


def servers(lwt: Mapping[str, Any], container: str | None = None) -> tuple[ServerCommand, ServerCommand | None]:
    """(the leader's vLLM server, the worker template's when it runs one); a UserError when the leader runs none.

    ``container`` names the leader's vLLM container (host data); the worker's is found by its command."""
    leader = find_server(dict(leader_template(lwt).get("spec") or {}), container)
    worker_spec = dict((lwt.get("workerTemplate") or {}).get("spec") or {})
    try:
        worker = find_server(worker_spec) if lwt.get("leaderTemplate") else None  # its container has its own name
    except UserError:
        worker = None  # workers that only join the leader's Ray cluster carry no engine flags
    return leader, worker


def flag_disagreement(lwt: Mapping[str, Any], container: str | None = None) -> str | None:
    """Why the leader and worker templates describe different engines (memory-relevant flags or model), or None."""
    leader, worker = servers(lwt, container)
    if worker is None:
        return None
    if leader.model != worker.model:
        return f"leader and worker templates name different models ({leader.model} vs {worker.model})"
    for flag in MEMORY_FLAGS:
        a, b = leader.flags.get(flag), worker.flags.get(flag)
        if a != b:
            return (f"leader and worker templates disagree on --{flag} (leader {a or 'unset'}, "
                    f"worker {b or 'unset'})")
    return None


def check_consistent(lwt: Mapping[str, Any], where: str, container: str | None = None) -> None:
    """A UserError naming ``where`` when the templates disagree on the engine."""
    why = flag_disagreement(lwt, container)
    if why:
        raise UserError(f"{where}: {why}; make them agree before remediating")


def _count(value: Any) -> int | None:
    try:
        return int(str(value))
    except ValueError:
        return None


def group_gpus(lwt: Mapping[str, Any], container: str | None = None, resource: str = "nvidia.com/gpu"
               ) -> tuple[int, int] | None:
    """(pods per group, GPUs per pod): ``size`` and the leader's vLLM container's ``resource`` limit, which the LWS
    pin copies to every worker; None when the leader names no whole GPU count (nothing to judge by)."""
    leader, _ = servers(lwt, container)
    limits = (leader.container.get("resources") or {}).get("limits") or {}
    per_pod = _count(limits.get(resource)) if resource in limits else None
    if per_pod is None:
        return None
    return int(lwt.get("size", 1) or 1), per_pod


def world_size_shortfall(lwt: Mapping[str, Any], container: str | None = None, resource: str = "nvidia.com/gpu"
                         ) -> str | None:
    """Why the group cannot start because its engine spans more GPUs than it has, or None.

    Before 0.12.0 the Ray executor counts every pod of the group (each with the leader's GPUs) and fails once its
    placement group never fills. From 0.12.0, with no ``--distributed-executor-backend`` and ``--nnodes`` 1,
    ``ParallelConfig`` compares TP × PP with the leader's own node's devices before it picks a backend
    (config/parallel.py@0.12.0 l.560, @0.13.0 l.561-566, @0.34.0 l.1161-1166): the group's other GPUs do not count.
    vLLM refuses before any memory is sized, so every LWS prediction asks this first."""
    shape = group_gpus(lwt, container, resource)
    if shape is None:
        return None
    leader, _ = servers(lwt, container)
    tp, pp = parallel_sizes(leader.flags)
    pods, per_pod = shape
    release = version_from_image(leader.image)
    version = parse_version(release)
    if node_only(leader.flags, version) and tp * pp > per_pod:
        label = f"vLLM {rules(release).label}"
        return (f"world size {tp * pp} (TP {tp} × PP {pp}) is larger than the {per_pod} GPU(s) of the leader's own "
                f"pod: with no --distributed-executor-backend and --nnodes 1, {label} counts its own node's GPUs, "
                f"not the group's, and refuses the start with '{world_size_words(tp * pp, per_pod, version)}' "
                "(name --distributed-executor-backend ray to span the group)")
    if tp * pp <= pods * per_pod:
        return None
    return (f"world size {tp * pp} (TP {tp} × PP {pp}) is larger than the {pods * per_pod} GPUs of the group "
            f"({pods} pods × {per_pod})")


def _scaled(value: Any, replicas: int, up: bool) -> int:
    """An intstr count or percentage of ``replicas`` (percentages round up for surge, down for unavailable)."""
    text = str(value).strip()
    if text.endswith("%"):
        share = replicas * float(text[:-1]) / 100
        return int(-(-share // 1)) if up else int(share // 1)
    return _count(text) or 0


def rollout_outage(lws: Mapping[str, Any]) -> str | None:
    """What an operator must hear before any template write: the rollout leaves no group serving, or None.

    The LWS default rollout (maxSurge 0, maxUnavailable 1) recreates groups in place; with as many groups
    unavailable as there are (a single group, the common multi-node case) the model is down for the restart."""
    spec = lws.get("spec") or {}
    replicas = int(spec.get("replicas", 1) if spec.get("replicas") is not None else 1)
    if replicas < 1:
        return None
    rolling = ((spec.get("rolloutStrategy") or {}).get("rollingUpdateConfiguration") or {})
    if _scaled(rolling.get("maxSurge", 0), replicas, True) > 0:
        return None  # new groups come up beside the old ones
    unavailable = max(1, _scaled(rolling.get("maxUnavailable", 1), replicas, False))  # both 0 still replaces one
    if unavailable < replicas:
        return None
    if replicas == 1:
        return ("replicas 1 with maxSurge 0: the only group is recreated; the model is unavailable for the "
                "restart")
    return (f"replicas {replicas} with maxSurge 0 and maxUnavailable {unavailable}: every group is recreated at once; "
            "the model is unavailable for the restart")
