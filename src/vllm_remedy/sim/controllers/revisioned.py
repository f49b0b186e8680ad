"""What a controller of pods with ControllerRevisions shares (StatefulSet, LeaderWorkerSet): informer hooks,
garbage collection of its pods and revisions, and its revisions in order.

Why one base: both upstream controllers own their pods directly and keep their templates as
ControllerRevisions; only how a revision is chosen and pods are rolled differs, and that stays in each.
"""

from __future__ import annotations

import contextlib
from typing import Any

from vllm_remedy.sim.clock import Clock
from vllm_remedy.sim.controllers.events import EventRecorder
from vllm_remedy.sim.controllers.manager import Manager
from vllm_remedy.sim.controllers.termination import delete_pod
from vllm_remedy.sim.controllers.util import controlled_by, controller_ref
from vllm_remedy.sim.store import ApiError, Store

Obj = dict[str, Any]
CR = "controllerrevisions.apps"


class RevisionedController:
    """Hooks and bookkeeping of a controller registered as ``word`` for objects of ``kind``."""

    word = ""  # the manager's queue name (``statefulset``); ``<word>-gc`` collects a deleted object's pods
    kind = ""  # the API kind its pods' controller reference names

    def __init__(self, store: Store, clock: Clock, manager: Manager, events: EventRecorder) -> None:
        self.store, self.clock, self.manager, self.events = store, clock, manager, events
        manager.register(self.word, self.sync)
        manager.register(f"{self.word}-gc", self._collect)

    def sync(self, namespace: str, name: str) -> None:
        raise NotImplementedError

    def on_object(self, namespace: str, name: str, obj: Obj, kind: str) -> None:
        """Informer hook: a change queues a sync; a deletion queues GC of its pods and revisions."""
        if kind == "DELETED":
            self.manager.enqueue(f"{self.word}-gc", namespace, obj["metadata"].get("uid", ""))
        else:
            self.manager.enqueue(self.word, namespace, name)

    def on_pod(self, namespace: str, pod: Obj, kind: str) -> None:
        """Informer hook: an owned pod's change (readiness, deletion) lets the object make progress."""
        ref = controller_ref(pod)
        if ref is not None and ref.get("kind") == self.kind:
            self.manager.enqueue(self.word, namespace, ref["name"])

    def _collect(self, namespace: str, uid: str) -> None:
        for resource in ("pods", CR):
            for obj in self.store.list(resource, namespace, lambda o: controlled_by(o, uid))[0]:
                with contextlib.suppress(ApiError):
                    if resource == "pods":
                        delete_pod(self.store, self.clock, namespace, obj["metadata"]["name"])
                    else:
                        self.store.delete(CR, namespace, obj["metadata"]["name"])

    def _revisions(self, owner: Obj) -> list[Obj]:
        """The owner's ControllerRevisions, oldest first."""
        uid = owner["metadata"]["uid"]
        found = self.store.list(CR, owner["metadata"]["namespace"], lambda o: controlled_by(o, uid))[0]
        return sorted(found, key=lambda r: int(r.get("revision", 0)))
