"""What diagnose and confirm read of a StatefulSet or LeaderWorkerSet host, in the shapes they read a Deployment in.

Why one module: steps 2–3 and 6 judge the same RolloutHistory and Pods shapes for every kind (``remedies.diagnose``,
``remedies.confirm``); only where revisions, templates and pods come from differs. A set's state fact
(``facts.statefulset`` / ``facts.leaderworkerset``) already carries them as ``rollout`` and ``pod_rows``, a
ControllerRevision standing where a ReplicaSet does. What the set facts do not read is added here: the current
log of running containers (confirm's "maximum concurrency").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyinfra.api import FactBase

from vllm_remedy.connectors import verbs
from vllm_remedy.connectors.scope import Scope
from vllm_remedy.facts.leaderworkerset import LeaderWorkerSetState, lws_pods_data
from vllm_remedy.facts.statefulset import StatefulSetState, sts_pods_data
from vllm_remedy.kube import lws_history
from vllm_remedy.kube.kinds import LEADERWORKERSET as LEADERWORKERSET_KIND
from vllm_remedy.kube.kinds import STATEFULSET as STATEFULSET_KIND
from vllm_remedy.operations.revision_evidence import revision_path
from vllm_remedy.operations.util import K8sHost

#: The set kinds' words (``kube.kinds``), as ``K8sHost.kind`` holds them.
STATEFULSET, LEADERWORKERSET = STATEFULSET_KIND.word, LEADERWORKERSET_KIND.word
SETS = (STATEFULSET, LEADERWORKERSET)
#: The object each set fact carries under its own key.
_OBJECT = {STATEFULSET: "statefulset", LEADERWORKERSET: "leaderworkerset"}


def state_fact(kind: str) -> type[FactBase]:
    """The fact that reads a set host of ``kind`` in one verb."""
    return StatefulSetState if kind == STATEFULSET else LeaderWorkerSetState


def workload(facts: Mapping[str, Any], kind: str) -> dict[str, Any]:
    """The set object as the API sent it."""
    return dict(facts[_OBJECT[kind]])


def template(facts: Mapping[str, Any], kind: str) -> dict[str, Any]:
    """The pod template that runs the engine: a StatefulSet's, an LWS's leader's."""
    obj = workload(facts, kind)
    if kind == LEADERWORKERSET:
        return lws_history.leader_template(lws_history.lwt_of(obj))
    return dict((obj.get("spec") or {}).get("template") or {})


def selector(facts: Mapping[str, Any], kind: str) -> dict[str, Any]:
    """The label selector of the set's pods (an LWS has none of its own: its name label)."""
    obj = workload(facts, kind)
    if kind == LEADERWORKERSET:
        return {"matchLabels": {lws_history.NAME_LABEL: (obj.get("metadata") or {}).get("name")}}
    return dict((obj.get("spec") or {}).get("selector") or {})


def with_totals(rows: Mapping[str, Any]) -> dict[str, Any]:
    """A set fact's ``pod_rows`` with the Pods fact's ``total``/``ready`` counts, which step 2's headline reads."""
    live = [p for p in rows.get("pods") or [] if not p.get("deleting")]
    return {**rows, "total": len(live), "ready": sum(1 for p in live if p.get("ready"))}


def leaders(facts: Mapping[str, Any]) -> set[str]:
    """Names of an LWS's leader pods (worker index 0): the pods that run ``vllm serve``."""
    return {p["metadata"]["name"] for p in facts.get("pods") or []
            if ((p.get("metadata") or {}).get("labels") or {}).get(lws_history.WORKER_LABEL, "0") == "0"}


def _scope(ctx: K8sHost) -> Scope:
    return Scope(client=ctx.client, namespace=ctx.namespace, deployment=ctx.deployment,
                 annotation_prefix=ctx.keys.prefix, container=ctx.container, kind=ctx.kind)


def pods_with_logs(ctx: K8sHost, facts: Mapping[str, Any], kind: str) -> dict[str, Any]:
    """The set's pods as the Pods fact's rows with ``logs=all``: the current log of running containers classified
    too, so confirm reads vLLM's "maximum concurrency" of a set's pods as of a Deployment's."""
    scope = _scope(ctx)
    pods = list(facts.get("pods") or [])
    logs = {f"{p['metadata']['name']}/{c}": verbs.container_log(scope, p["metadata"]["name"], c, previous,
                                                                 verbs.DEFAULT_TAIL)
            for p in pods for c, previous in verbs.wanted_logs(p, "all")}
    obj, revisions = workload(facts, kind), list(facts.get("revisions") or [])
    rows = sts_pods_data(obj, revisions, pods, logs) if kind == STATEFULSET else lws_pods_data(obj, revisions, pods,
                                                                                                 logs)
    return with_totals(rows)


def controllerrevision_path(ctx: K8sHost, name: str) -> str:
    """The API path of the set's ControllerRevision ``name`` (where its known-good mark and crash record live)."""
    return revision_path(ctx.namespace, name)
