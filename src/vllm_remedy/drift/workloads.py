"""What the drift runner reads of one host, per workload kind, in the shape the checks take (a Deployment's).

Why per kind: a namespace host (``@k8s/<cluster>/<namespace>``) expands to every vLLM workload of every kind,
and a Deployment-only read fails the others ("reads a deployment, and this host is a statefulset"). Each kind
gives the checks an object whose ``spec.template`` is the vLLM pod template and its pods as Pods-fact rows;
a kind whose fix no deploy plans yet gets a note (:func:`fix_note`) instead of one. ``run`` is the runner's
``Run`` (its pyinfra state, for failed hosts, and its log, for the reason).
"""

from __future__ import annotations

from typing import Any

from pyinfra.api.host import Host

from vllm_remedy.facts.deployment import Deployment
from vllm_remedy.facts.inferenceservice import InferenceServiceState
from vllm_remedy.facts.leaderworkerset import LeaderWorkerSetState
from vllm_remedy.facts.pods import Pods
from vllm_remedy.facts.statefulset import StatefulSetState
from vllm_remedy.kube.kinds import DEPLOYMENT, INFERENCESERVICE, LEADERWORKERSET, STATEFULSET
from vllm_remedy.kube.lws_history import leader_template, lwt_of


class HostFailed(Exception):
    """A host could not be checked; the message is the one line the report shows."""


def deployment_of(run: Any, host: Host) -> dict[str, Any]:
    """The host's Deployment as read (HostFailed saying why when it could not be)."""
    fact = host.get_fact(Deployment)
    if host in run.state.failed_hosts or not fact or not fact.get("object"):
        raise HostFailed(run.log.error(host.name, "could not read the Deployment"))
    return dict(fact["object"])


def _pods(run: Any, host: Host) -> dict[str, Any]:
    """The Pods fact exactly as deploys/budget.py reads it (same verb command), so the read snapshot answers
    both from one read: the crash-loop check adds no request per host."""
    fact = host.get_fact(Pods)
    if host in run.state.failed_hosts or not isinstance(fact, dict):
        raise HostFailed(run.log.error(host.name, "could not read the pods"))
    return fact


def _inferenceservice(run: Any, host: Host) -> tuple[dict[str, Any], dict[str, Any]]:
    """An InferenceService host as the checks read a Deployment: its metadata with the pod template its predictor
    makes (``kube.inferenceservice``), and the pods of the Deployment KServe owns for it."""
    fact = host.get_fact(InferenceServiceState)
    if host in run.state.failed_hosts or not isinstance(fact, dict) or not fact.get("inferenceservice"):
        raise HostFailed(run.log.error(host.name, "could not read the InferenceService"))
    isvc = fact["inferenceservice"]
    view = {"apiVersion": isvc.get("apiVersion"), "kind": isvc.get("kind"), "metadata": isvc.get("metadata") or {},
            "spec": {"template": fact["template"]}}
    return view, fact["pods"] or {"pods": []}


def _statefulset(run: Any, host: Host) -> tuple[dict[str, Any], dict[str, Any]]:
    """A StatefulSet host: the set itself (its template is where a Deployment's is) and its pods as Pods rows."""
    fact = host.get_fact(StatefulSetState)
    if host in run.state.failed_hosts or not isinstance(fact, dict) or not fact.get("statefulset"):
        raise HostFailed(run.log.error(host.name, "could not read the StatefulSet"))
    return dict(fact["statefulset"]), fact["pod_rows"]


def _leaderworkerset(run: Any, host: Host) -> tuple[dict[str, Any], dict[str, Any]]:
    """A LeaderWorkerSet host as the checks read a Deployment: its metadata with the leader's pod template (the
    leader runs ``vllm serve``; the prediction splits the model over the group) plus the whole
    ``leaderWorkerTemplate`` (the leader-worker-flags check compares the two), and every pod of the set."""
    fact = host.get_fact(LeaderWorkerSetState)
    if host in run.state.failed_hosts or not isinstance(fact, dict) or not fact.get("leaderworkerset"):
        raise HostFailed(run.log.error(host.name, "could not read the LeaderWorkerSet"))
    lws = fact["leaderworkerset"]
    view = {"apiVersion": lws.get("apiVersion"), "kind": lws.get("kind"), "metadata": lws.get("metadata") or {},
            "spec": {"template": leader_template(lwt_of(lws)), "leaderWorkerTemplate": lwt_of(lws)}}
    return view, fact["pod_rows"]


#: Kinds whose fix no deploy plans yet (deploys/budget.py refuses them): checked, with this note instead of a fix.
NO_FIX = {STATEFULSET.word: "deploys/budget.py does not change a StatefulSet's flags or GPU pin yet",
          LEADERWORKERSET.word: "deploys/budget.py does not write a LeaderWorkerSet's leader and worker templates yet"}


def fix_note(kind: str) -> str | None:
    """Why a host of ``kind`` gets no planned fix (None: the deploys' operations are planned)."""
    if kind not in NO_FIX:
        return None
    return (f"fix not planned for a {kind}: {NO_FIX[kind]}; roll back with deploys/restore.py or change it in Git "
            "or by hand")


def workload_of(run: Any, host: Host, kind: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the object the checks read, its pods as Pods rows) for a host of ``kind`` (``kube.kinds`` word)."""
    reads = {INFERENCESERVICE.word: _inferenceservice, STATEFULSET.word: _statefulset,
             LEADERWORKERSET.word: _leaderworkerset}.get(kind)
    if reads is not None:
        return reads(run, host)
    if kind != DEPLOYMENT.word:
        raise HostFailed(f"{kind}: not a workload kind the drift checks read")
    return deployment_of(run, host), _pods(run, host)
