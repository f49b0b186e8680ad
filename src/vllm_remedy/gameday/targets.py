"""What a game day needs to know about its target's kind: where it lives, its pod template, and "rolled out".

Why an adapter and not a second runner: the game (fault, observer, verdict, restore) only needs a few reads
of the target — its template, the pods' selector, desired and Ready counts, whether the controller has seen
the last write and finished rolling out — and which spec fields and history objects the pre-game restore puts
back. Each kind answers those from its own status (a Deployment's available replicas, a StatefulSet's
update/current revisions, an InferenceService's Ready condition). Pure: objects in, answers out; the I/O
stays in ``world`` and ``observe``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from vllm_remedy.errors import UserError
from vllm_remedy.kube.client import KubeClient
from vllm_remedy.kube.kinds import DEPLOYMENT, INFERENCESERVICE, LEADERWORKERSET, STATEFULSET, Kind
from vllm_remedy.kube.lws_history import NAME_LABEL
from vllm_remedy.kube.lws_wait import observed_generation
from vllm_remedy.kube.selectors import selector_string

Obj = dict[str, Any]


def _generation_seen(obj: Obj) -> bool:
    status = obj.get("status") or {}
    return int(status.get("observedGeneration") or 0) >= int((obj.get("metadata") or {}).get("generation") or 0)


def _lws_seen(obj: Obj) -> bool:
    """The LWS controller has recorded the current generation (``kube.lws_wait.observed_generation``: the status's,
    else its conditions', since v0.9.0). A controller before it records none, and the object alone cannot tell a
    synced set from a stale one: never seen here (the production waits read the pods' template hash instead)."""
    seen = observed_generation(obj)
    return seen is not None and seen >= int((obj.get("metadata") or {}).get("generation") or 0)


def _deployment_done(dep: Obj) -> bool:
    """``kubectl rollout status`` would say "successfully rolled out", and every replica is Ready."""
    spec, status = dep.get("spec") or {}, dep.get("status") or {}
    want = int(spec.get("replicas", 1))
    return (_generation_seen(dep) and status.get("updatedReplicas", 0) == want and status.get("replicas", 0) == want
            and status.get("readyReplicas", 0) == want and status.get("availableReplicas", 0) == want)


def _statefulset_done(sts: Obj) -> bool:
    """Every replica Ready on the update revision, and the controller has made it the current one."""
    spec, status = sts.get("spec") or {}, sts.get("status") or {}
    want = int(spec.get("replicas", 1))
    return (_generation_seen(sts) and status.get("replicas", 0) == want and status.get("readyReplicas", 0) == want
            and status.get("updatedReplicas", 0) == want
            and status.get("updateRevision") == status.get("currentRevision"))


def _lws_done(lws: Obj) -> bool:
    """Every group Ready on the current template (``readyReplicas`` counts groups)."""
    spec, status = lws.get("spec") or {}, lws.get("status") or {}
    want = int(spec.get("replicas", 1))
    return (_lws_seen(lws) and status.get("replicas", 0) == want and status.get("readyReplicas", 0) == want
            and status.get("updatedReplicas", 0) == want)


def _isvc_done(isvc: Obj) -> bool:
    """KServe says Ready for the generation it last saw (its predictor Deployment rolled out)."""
    conditions = (isvc.get("status") or {}).get("conditions") or []
    return _generation_seen(isvc) and any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _match_labels(obj: Obj) -> str:
    return selector_string((obj.get("spec") or {}).get("selector"))


def _lws_pods(lws: Obj) -> str:
    return f"{NAME_LABEL}={(lws.get('metadata') or {}).get('name', '')}"


def _isvc_pods(isvc: Obj) -> str:
    return f"serving.kserve.io/inferenceservice={(isvc.get('metadata') or {}).get('name', '')}"


@dataclass(frozen=True)
class Adapter:
    """One kind's answers: its pod template, rolled-out test, the spec fields a restore puts back, and the
    history resource (``replicasets``, ``controllerrevisions``) whose annotations of ours a game must not leave."""

    kind: Kind
    rolled_out: Callable[[Obj], bool]
    restore_fields: tuple[str, ...]
    history: str
    template_at: tuple[str, ...] = ("spec", "template")  # what the fault changes and the game tells apart
    pods: Callable[[Obj], str] = _match_labels  # label selector of its pods
    #: The Deployment (``<name><suffix>``) whose pod template the kind's controller derives, for the policy and
    #: flag checks (KServe's raw mode); None: the object's own template is the pod template.
    pod_deployment: str | None = None
    #: Where the pod template that runs ``vllm serve`` sits, for the policy and flag checks.
    pod_template_at: tuple[str, ...] = ("spec", "template")
    observed: Callable[[Obj], bool] = _generation_seen  # the controller has seen the last write
    #: The controller will not replace a pod that is not Ready (OrderedReady StatefulSets): after writing the
    #: pre-game template back, the game deletes such pods, as an operator would.
    delete_unready: bool = False


ADAPTERS: dict[str, Adapter] = {
    "deployment": Adapter(DEPLOYMENT, _deployment_done, ("template", "strategy", "replicas"), "replicasets"),
    "statefulset": Adapter(STATEFULSET, _statefulset_done, ("template", "updateStrategy", "replicas"),
                           "controllerrevisions", delete_unready=True),
    "leaderworkerset": Adapter(LEADERWORKERSET, _lws_done, ("leaderWorkerTemplate", "replicas"),
                               "controllerrevisions", template_at=("spec", "leaderWorkerTemplate"), pods=_lws_pods,
                               pod_template_at=("spec", "leaderWorkerTemplate", "leaderTemplate"),
                               observed=_lws_seen),
    "inferenceservice": Adapter(INFERENCESERVICE, _isvc_done, ("predictor",), "replicasets",
                                template_at=("spec", "predictor"), pods=_isvc_pods, pod_deployment="-predictor"),
}


@dataclass(frozen=True)
class Target:
    """The scenario's workload: kind, namespace and name, with its kind's adapter."""

    word: str
    namespace: str
    name: str

    @property
    def adapter(self) -> Adapter:
        return ADAPTERS[self.word]

    @property
    def path(self) -> str:
        """API path of the target object, which workload steps and the restore patch."""
        kind = self.adapter.kind
        return KubeClient.object_path(self.namespace, kind.resource, self.name, kind.group)

    def host(self, context: str) -> str:
        """The pyinfra host the responder runs against (a Deployment keeps the short form on-call types)."""
        if self.word == "deployment":
            return f"@k8s/{context}/{self.namespace}/{self.name}"
        return f"@k8s/{context}/{self.namespace}/{self.word}/{self.name}"

    def label(self) -> str:
        return f"{self.word} {self.namespace}/{self.name}"

    def history_path(self, name: str | None = None) -> str:
        return KubeClient.object_path(self.namespace, self.adapter.history, name)

    def template(self, obj: Obj) -> Obj:
        """The template the fault changes (``spec.template``; an LWS's ``spec.leaderWorkerTemplate``, leader and
        workers; an InferenceService's ``spec.predictor``)."""
        return _at(obj, self.adapter.template_at)

    def selector(self, obj: Obj) -> str:
        """The label selector of the target's pods, as ``kubectl get pods -l`` takes it."""
        return self.adapter.pods(obj)

    @property
    def pod_deployment(self) -> str | None:
        """The Deployment that carries the pod template, when the kind's controller derives one."""
        suffix = self.adapter.pod_deployment
        return None if suffix is None else self.name + suffix

    def view(self, obj: Obj, pods_from: Obj | None) -> Obj:
        """The target as the policy and flag checks read a Deployment: its metadata, the pod template that runs
        vLLM (from ``pods_from`` when the kind's controller derives it) and its desired and Ready replicas."""
        source = pods_from if pods_from is not None else obj
        template = _at(source, ("spec", "template") if pods_from is not None else self.adapter.pod_template_at)
        return {"metadata": obj.get("metadata") or {},
                "spec": {"template": template, "replicas": (source.get("spec") or {}).get("replicas", 1)},
                "status": {"readyReplicas": int((source.get("status") or {}).get("readyReplicas", 0))}}

    def observed(self, obj: Obj) -> bool:
        """The controller has seen the last write (each workload step is one revision)."""
        return self.adapter.observed(obj)

    @staticmethod
    def counts(view: Obj) -> tuple[int, int]:
        """(desired, Ready) replicas of the :meth:`view`."""
        return int(view["spec"].get("replicas", 1)), int(view["status"]["readyReplicas"])

    def done(self, obj: Obj) -> bool:
        """Rolled out and every replica Ready."""
        return self.adapter.rolled_out(obj)

    def restored_spec(self, before: Obj, now: Obj) -> None:
        """Put ``before``'s restore fields back into ``now`` (in place)."""
        for key in self.adapter.restore_fields:
            if key in before["spec"]:
                now["spec"][key] = copy.deepcopy(before["spec"][key])


def _at(obj: Obj, path: tuple[str, ...]) -> Obj:
    node: Any = obj
    for key in path:
        node = node.get(key) if isinstance(node, dict) else None
    return node if isinstance(node, dict) else {}


def target_of(word: str, namespace: str, name: str, where: str) -> Target:
    """A Target, or one error line naming ``where`` when the kind has no game-day adapter yet."""
    if word not in ADAPTERS:
        raise UserError(f"{where}: kind {word!r}: game days support {', '.join(ADAPTERS)}")
    return Target(word, namespace, name)
