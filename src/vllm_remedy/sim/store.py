"""The rehearsal cluster's object store: what etcd + the apiserver's storage layer do for us.

One ``Store`` per simulated cluster. It owns the only copy of every object; callers get deep copies,
so nothing outside can change state without going through ``create``/``update``/``delete`` — which
is where resourceVersion, generation, uid and watch events are maintained, exactly once.

Semantics kept from Kubernetes because kubectl and the client depend on them:
- one cluster-wide, strictly increasing resourceVersion (a decimal string);
- a write whose result equals the stored object is a no-op: no new resourceVersion, no event
  (kubectl prints "(no change)");
- ``metadata.resourceVersion`` in an update that differs from the stored one → 409 Conflict;
- ``metadata.generation`` moves only when ``spec`` changes or a graceful deletion begins; ``status``
  writes never bump it;
- watches replay every event newer than the resourceVersion they start from, or 410 Gone when it
  has been compacted out of the event window.
"""

from __future__ import annotations

import copy
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from vllm_remedy.sim.clock import Clock

Obj = dict[str, Any]

# How many events a watch can resume from; older resourceVersions get 410 Gone, as after compaction.
EVENT_WINDOW = 10_000


class ApiError(Exception):
    """A Kubernetes ``Status`` failure; the HTTP layer turns it into the response body."""

    def __init__(self, code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details or {}

    def status(self) -> Obj:
        """The metav1.Status body a real apiserver sends with the error, which kubectl prints as
        ``Error from server (<reason>): <message>``."""
        return {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": self.message, "reason": self.reason, "details": self.details, "code": self.code,
        }


def not_found(resource: str, name: str) -> ApiError:
    """404 NotFound worded as the apiserver words it (``deployments.apps "x" not found``), with kind and
    group split in ``details``."""
    plural, _, group = resource.partition(".")
    details = {"name": name, "kind": plural, **({"group": group} if group else {})}
    return ApiError(404, "NotFound", f'{resource} "{name}" not found', details)


def conflict(resource: str, name: str) -> ApiError:
    """409 Conflict for a stale resourceVersion, in the apiserver's words: the precondition that keeps
    our writes from overwriting a concurrent edit."""
    return ApiError(
        409, "Conflict",
        f'Operation cannot be fulfilled on {resource} "{name}": the object has been modified; '
        "please apply your changes to the latest version and try again",
        {"name": name, "kind": resource.partition(".")[0]},
    )


@dataclass(frozen=True)
class Event:
    """One watch event: ADDED / MODIFIED / DELETED with the object as it was after the change."""

    type: str
    resource: str
    namespace: str
    rv: int
    object: Obj
    previous: Obj | None = None  # the object before a MODIFIED (watch selectors need both sides)


@dataclass
class Store:
    """All objects of one simulated cluster, keyed by (resource, namespace, name).

    ``resource`` is the plural with its group, as in RBAC: ``pods``, ``nodes``, ``deployments.apps``,
    ``replicasets.apps``, ``httproutes.gateway.networking.k8s.io``. Cluster-scoped objects use
    namespace ``""``.
    """

    clock: Clock
    name: str = "default"
    _objects: dict[tuple[str, str, str], Obj] = field(default_factory=dict)
    _rv: int = 1
    _events: deque[Event] = field(default_factory=lambda: deque(maxlen=EVENT_WINDOW))
    _cond: threading.Condition = field(default_factory=threading.Condition)
    _listeners: list[Callable[[Event], None]] = field(default_factory=list)
    _index: dict[str, set[tuple[str, str, str]]] = field(default_factory=dict)  # resource -> keys, for list()
    # Called under the lock with each change before it takes effect (the server's write-ahead log);
    # if it raises, the change is not made.
    journal: Callable[[Obj], None] | None = field(default=None, repr=False)
    # Mutating admission plugins the world enables (``sim.admission``): each may change a new object in place.
    admission: list[Callable[[str, Obj], None]] = field(default_factory=list, repr=False)

    # -- reads -----------------------------------------------------------------------------------

    @property
    def resource_version(self) -> str:
        """The cluster-wide resourceVersion now: what a list returns and a watch resumes from."""
        with self._cond:
            return str(self._rv)

    def get(self, resource: str, namespace: str, name: str) -> Obj:
        """A deep copy, so callers may edit it without touching stored state; 404 as the apiserver's."""
        with self._cond:
            obj = self._objects.get((resource, namespace, name))
            if obj is None:
                raise not_found(resource, name)
            return copy.deepcopy(obj)

    def find(self, resource: str, namespace: str, name: str) -> Obj | None:
        """``get`` for callers to whom a missing object is normal (deleted meanwhile), not an error."""
        try:
            return self.get(resource, namespace, name)
        except ApiError:
            return None

    def list(
        self, resource: str, namespace: str | None = None, match: Callable[[Obj], bool] | None = None,
    ) -> tuple[list[Obj], str]:
        """Objects of ``resource`` (all namespaces when ``namespace`` is None), sorted by namespace/name."""
        with self._cond:
            keys = self._index.get(resource, set())
            items = []
            for key in sorted(keys):
                obj = self._objects[key]
                if (namespace is None or key[1] == namespace) and (match is None or match(obj)):
                    items.append(copy.deepcopy(obj))
            return items, str(self._rv)

    # -- writes ----------------------------------------------------------------------------------

    def create(self, resource: str, obj: Obj, *, dry_run: bool = False) -> Obj:
        """POST semantics: generateName, uid, creationTimestamp, generation 1 for objects with a spec;
        409 AlreadyExists; ``dry_run`` returns the result without storing it or emitting an event."""
        meta = obj.setdefault("metadata", {})
        name = meta.get("name")
        if not name and meta.get("generateName"):
            name = meta["generateName"] + uuid.uuid4().hex[:5]
            meta["name"] = name
        if not name:
            message = f"{resource}: metadata.name: Required value: name or generateName is required"
            raise ApiError(422, "Invalid", message)
        namespace = meta.get("namespace", "")
        with self._cond:
            key = (resource, namespace, name)
            if key in self._objects:
                raise ApiError(409, "AlreadyExists", f'{resource} "{name}" already exists',
                               {"name": name, "kind": resource.partition(".")[0]})
            obj = copy.deepcopy(obj)
            for admit in self.admission:  # mutating admission, as the apiserver runs it on every create
                admit(resource, obj)
            meta = obj["metadata"]
            meta.setdefault("uid", str(uuid.uuid4()))
            meta.setdefault("creationTimestamp", self.clock.timestamp())
            if "spec" in obj:
                meta["generation"] = 1
            if dry_run:
                meta["resourceVersion"] = str(self._rv)
                return obj
            self._commit("ADDED", resource, key, obj)
            return copy.deepcopy(obj)

    def update(self, resource: str, obj: Obj, *, status: bool = False, dry_run: bool = False) -> Obj:
        """Replace an object (PUT semantics). ``status=True`` is the /status subresource: only status moves.

        A ``metadata.resourceVersion`` in ``obj`` is a precondition (409 when stale); without one the
        write is unconditional, as for a PUT without resourceVersion.
        """
        meta = obj.get("metadata", {})
        name, namespace = meta.get("name", ""), meta.get("namespace", "")
        with self._cond:
            key = (resource, namespace, name)
            old = self._objects.get(key)
            if old is None:
                raise not_found(resource, name)
            wanted_rv = meta.get("resourceVersion")
            if wanted_rv and wanted_rv != old["metadata"]["resourceVersion"]:
                raise conflict(resource, name)
            new = copy.deepcopy(old)
            if status:
                new["status"] = copy.deepcopy(obj.get("status", {}))
            else:
                new = copy.deepcopy(obj)
                if "status" in old:
                    new["status"] = copy.deepcopy(old["status"])  # main resource ignores status
                for immutable in ("uid", "creationTimestamp", "generation", "resourceVersion", "deletionTimestamp",
                                  "deletionGracePeriodSeconds"):
                    if immutable in old["metadata"]:
                        new["metadata"][immutable] = old["metadata"][immutable]
                    else:
                        new["metadata"].pop(immutable, None)
                if new.get("spec") != old.get("spec"):
                    new["metadata"]["generation"] = old["metadata"].get("generation", 0) + 1
            if new == old:
                return copy.deepcopy(old)
            if dry_run:
                return new
            self._commit("MODIFIED", resource, key, new, previous=old)
            return copy.deepcopy(new)

    def mutate(
        self, resource: str, namespace: str, name: str, fn: Callable[[Obj], None], *, status: bool = False,
    ) -> Obj:
        """Read-modify-write under the store lock: how controllers change objects without racing clients."""
        with self._cond:
            current = self.get(resource, namespace, name)
            fn(current)
            current["metadata"].pop("resourceVersion", None)
            return self.update(resource, current, status=status)

    def mark_deleting(self, resource: str, namespace: str, name: str, deadline: str, grace: int) -> Obj:
        """Graceful deletion's first half: stamp ``deletionTimestamp`` once (a MODIFIED event), object kept.

        The field is immutable to every other write, as on a real API server; a second DELETE while the
        object is terminating changes nothing.
        """
        with self._cond:
            key = (resource, namespace, name)
            old = self._objects.get(key)
            if old is None:
                raise not_found(resource, name)
            if old["metadata"].get("deletionTimestamp"):
                return copy.deepcopy(old)
            new = copy.deepcopy(old)
            new["metadata"].update(deletionTimestamp=deadline, deletionGracePeriodSeconds=grace,
                                   generation=old["metadata"].get("generation", 0) + 1)
            self._commit("MODIFIED", resource, key, new, previous=old)
            return copy.deepcopy(new)

    def delete(self, resource: str, namespace: str, name: str, *, dry_run: bool = False) -> Obj:
        """Immediate removal (no finalizers or graceful period) with a DELETED event at a fresh
        resourceVersion, so watches resume past it."""
        with self._cond:
            key = (resource, namespace, name)
            old = self._objects.get(key)
            if old is None:
                raise not_found(resource, name)
            if dry_run:
                return copy.deepcopy(old)
            if self.journal is not None:
                self.journal({"op": "delete", "rv": self._rv + 1, "resource": resource, "namespace": namespace,
                              "name": name})
            del self._objects[key]
            self._index.get(resource, set()).discard(key)
            self._rv += 1
            gone = copy.deepcopy(old)
            gone["metadata"]["resourceVersion"] = str(self._rv)
            self._emit(Event("DELETED", resource, namespace, self._rv, gone))
            return gone

    def _commit(
        self, kind: str, resource: str, key: tuple[str, str, str], obj: Obj, previous: Obj | None = None,
    ) -> None:
        obj["metadata"]["resourceVersion"] = str(self._rv + 1)
        if self.journal is not None:
            self.journal({"op": "put", "rv": self._rv + 1, "resource": resource, "namespace": key[1],
                          "name": key[2], "object": obj})
        self._rv += 1
        self._objects[key] = obj
        self._index.setdefault(resource, set()).add(key)
        self._emit(Event(kind, resource, key[1], self._rv, copy.deepcopy(obj), previous))

    def _emit(self, event: Event) -> None:
        self._events.append(event)
        self._cond.notify_all()
        for listener in list(self._listeners):
            listener(event)

    # -- change feeds ----------------------------------------------------------------------------

    def subscribe(self, listener: Callable[[Event], None]) -> None:
        """Call ``listener`` synchronously, under the store lock, after every change (controllers'
        informers). It must be quick and must not write to the store; queue work instead."""
        self._listeners.append(listener)

    def watch(
        self, resource: str, namespace: str | None, since_rv: int, *, deadline: float,
        stop: threading.Event | None = None, idle_every: float | None = None,
    ) -> Iterator[Event | None]:
        """Yield events of ``resource`` newer than ``since_rv`` until ``deadline`` (time.monotonic).

        With ``idle_every`` (real seconds), yields None after that long without an event, so the
        HTTP layer can send a BOOKMARK and notice a gone client. Raises 410 Gone when ``since_rv``
        is older than the event window, as after etcd compaction.
        """
        with self._cond:
            oldest = self._events[0].rv if self._events else self._rv + 1
            if since_rv < oldest - 1 and since_rv < self._rv:
                raise ApiError(410, "Expired", f"too old resource version: {since_rv} ({self._rv})")
        cursor = since_rv
        last_yield = time.monotonic()
        while True:
            with self._cond:
                pending: list[Event] = []
                for event in reversed(self._events):  # newest first; stop at what was already seen
                    if event.rv <= cursor:
                        break
                    pending.append(event)
                if not pending:
                    now = time.monotonic()
                    remaining = deadline - now
                    if remaining <= 0 or (stop is not None and stop.is_set()):
                        return
                    wait = min(remaining, 0.5)
                    if idle_every is not None:
                        if now - last_yield >= idle_every:
                            last_yield = now
                            pending_idle = True
                        else:
                            pending_idle = False
                            wait = min(wait, idle_every - (now - last_yield))
                    else:
                        pending_idle = False
                    if not pending_idle:
                        self._cond.wait(timeout=wait)
                        continue
            if not pending:
                yield None
                continue
            pending.reverse()
            for event in pending:
                cursor = event.rv
                if event.resource == resource and (namespace is None or event.namespace == namespace):
                    last_yield = time.monotonic()
                    yield event

    # -- persistence -----------------------------------------------------------------------------

    def snapshot(self) -> Obj:
        """Everything needed to restart the cluster where it stopped (``sim up --state``)."""
        with self._cond:
            return {
                "resourceVersion": self._rv,
                "objects": [
                    {"resource": res, "object": copy.deepcopy(obj)}
                    for (res, _, _), obj in sorted(self._objects.items())
                ],
            }

    def restore(self, snapshot: Obj) -> None:
        """Replace all state with a snapshot without emitting events (``Cluster.start`` resyncs the
        controllers); the resourceVersion carries on, and older watches get 410 and relist."""
        with self._cond:
            self._objects.clear()
            self._index.clear()
            self._events.clear()
            for entry in snapshot.get("objects", []):
                obj = entry["object"]
                meta = obj["metadata"]
                key = (entry["resource"], meta.get("namespace", ""), meta["name"])
                self._objects[key] = copy.deepcopy(obj)
                self._index.setdefault(key[0], set()).add(key)
            self._rv = int(snapshot.get("resourceVersion", 1))
