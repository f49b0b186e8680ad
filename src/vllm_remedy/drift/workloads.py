"""What the drift runner reads of one host, per workload kind, in the shape the checks take (a Deployment's).

Why per kind: a namespace host (``@k8s/<cluster>/<namespace>``) expands to every vLLM workload of every kind,
and a Deployment-only read fails the others ("reads a deployment, and this host is a statefulset"). Each kind
gives the checks an object whose ``spec.template`` is the vLLM pod template and its pods as Pods-fact rows;
each kind's fix is the list deploys/budget.py runs for it (:func:`fix_of`) and its toggles are reverted by the
operation deploys/enforce_eager.py records them for (:func:`revert_of`). ``run`` is ``session.Run`` (its
pyinfra state, for failed hosts, and its log, for the reason).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyinfra.api.host import Host

from vllm_remedy.facts.deployment import Deployment
from vllm_remedy.facts.inferenceservice import InferenceServiceState
from vllm_remedy.facts.leaderworkerset import LeaderWorkerSetState
from vllm_remedy.facts.pods import Pods
from vllm_remedy.facts.statefulset import StatefulSetState
from vllm_remedy.kube.kinds import DEPLOYMENT, INFERENCESERVICE, LEADERWORKERSET, STATEFULSET
from vllm_remedy.kube.lws_history import leader_template, lwt_of
from vllm_remedy.operations import budget, lws_budget, lws_eager, workload

#: One deploy operation as a FIX list names it: (label, operation, its arguments).
Step = tuple[str, Callable[..., Any], dict[str, Any]]


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
    return checked_view(LEADERWORKERSET.word, fact["leaderworkerset"]), fact["pod_rows"]


def checked_view(kind: str, obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` (a workload of ``kind`` as the API sent it) as the checks read a Deployment: an LWS's metadata with the
    leader's template at ``spec.template`` (its annotations hold the toggles); other kinds keep theirs there."""
    if kind != LEADERWORKERSET.word:
        return dict(obj)
    lwt = lwt_of(obj)
    return {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"), "metadata": obj.get("metadata") or {},
            "spec": {"template": leader_template(lwt), "leaderWorkerTemplate": lwt}}


#: Kinds whose fix no deploy plans yet: checked, with this note instead of a fix (none now: deploys/budget.py fixes
#: Deployments and StatefulSets with ``budget.FIX``, LeaderWorkerSets with ``lws_budget.FIX``; an InferenceService
#: has its own operation, planned by the runner).
NO_FIX: dict[str, str] = {}
#: Kinds deploys/enforce_eager.py records timed toggles on, which ``vllm-remedy expire`` reverts.
TOGGLED = (DEPLOYMENT.word, STATEFULSET.word, LEADERWORKERSET.word)


def fix_of(kind: str) -> tuple[Step, ...]:
    """deploys/budget.py's operations for ``kind``, in its order: the very list the deploy runs, so drift's plan
    cannot go stale (``lws_budget.FIX`` for a LeaderWorkerSet, ``budget.FIX`` for a Deployment or StatefulSet)."""
    return lws_budget.FIX if kind == LEADERWORKERSET.word else budget.FIX


def revert_of(kind: str) -> Callable[..., Any]:
    """The operation that reverts ``kind``'s expired toggles, the one every deploy of that kind runs."""
    return lws_eager.revert_expired_toggles if kind == LEADERWORKERSET.word else workload.revert_expired_toggles


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
