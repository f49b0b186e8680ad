"""What a game day needs to know about its target's kind: where it lives, its pod template, and "rolled out".

Why an adapter and not a second runner: the game (fault, observer, verdict, restore) only needs a few reads
of the target — its template, the pods' selector, desired and Ready counts, whether the controller has seen
the last write and finished rolling out — and which spec fields and history objects the pre-game restore puts
back. Each kind answers those from its own status (a Deployment's available replicas, a StatefulSet's
update/current revisions). Pure: objects in, answers out; the I/O stays in ``world`` and ``observe``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from vllm_remedy.errors import UserError
from vllm_remedy.kube.client import KubeClient
from vllm_remedy.kube.kinds import DEPLOYMENT, STATEFULSET, Kind
from vllm_remedy.kube.selectors import selector_string

Obj = dict[str, Any]


def _generation_seen(obj: Obj) -> bool:
    status = obj.get("status") or {}
    return int(status.get("observedGeneration") or 0) >= int((obj.get("metadata") or {}).get("generation") or 0)


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


@dataclass(frozen=True)
class Adapter:
    """One kind's answers: its pod template, rolled-out test, the spec fields a restore puts back, and the
    history resource (``replicasets``, ``controllerrevisions``) whose annotations of ours a game must not leave."""

    kind: Kind
    rolled_out: Callable[[Obj], bool]
    restore_fields: tuple[str, ...]
    history: str
    #: The controller will not replace a pod that is not Ready (OrderedReady StatefulSets): after writing the
    #: pre-game template back, the game deletes such pods, as an operator would.
    delete_unready: bool = False


ADAPTERS: dict[str, Adapter] = {
    "deployment": Adapter(DEPLOYMENT, _deployment_done, ("template", "strategy", "replicas"), "replicasets"),
    "statefulset": Adapter(STATEFULSET, _statefulset_done, ("template", "updateStrategy", "replicas"),
                           "controllerrevisions", delete_unready=True),
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

    @staticmethod
    def template(obj: Obj) -> Obj:
        """The pod template (``spec.template`` for every kind served so far)."""
        return ((obj.get("spec") or {}).get("template")) or {}

    @staticmethod
    def selector(obj: Obj) -> str:
        """The label selector of the target's pods, as ``kubectl get pods -l`` takes it."""
        return selector_string((obj.get("spec") or {}).get("selector"))

    @staticmethod
    def observed(obj: Obj) -> bool:
        """The controller has seen the last write (each workload step is one revision)."""
        return _generation_seen(obj)

    def counts(self, obj: Obj) -> tuple[int, int]:
        """(desired, Ready) replicas, from the kind's own status."""
        return int((obj.get("spec") or {}).get("replicas", 1)), int((obj.get("status") or {}).get("readyReplicas", 0))

    def done(self, obj: Obj) -> bool:
        """Rolled out and every replica Ready."""
        return self.adapter.rolled_out(obj)

    def restored_spec(self, before: Obj, now: Obj) -> None:
        """Put ``before``'s restore fields back into ``now`` (in place)."""
        for key in self.adapter.restore_fields:
            if key in before["spec"]:
                now["spec"][key] = copy.deepcopy(before["spec"][key])


def target_of(word: str, namespace: str, name: str, where: str) -> Target:
    """A Target, or one error line naming ``where`` when the kind has no game-day adapter yet."""
    if word not in ADAPTERS:
        raise UserError(f"{where}: kind {word!r}: game days support {', '.join(ADAPTERS)}")
    return Target(word, namespace, name)
