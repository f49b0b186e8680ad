"""A read-only client of one cluster that every host of a planning run shares: each namespace is listed once.

Why: a drift check reads, per Deployment, the Deployment (at connect and in three verbs), its ReplicaSets and
its pods, the cluster's clock, nodes and every GPU-holding pod — O(hosts) requests, 8+ per host, for 50
Deployments that live in one namespace. Here Deployments, ReplicaSets and pods are listed once per namespace
and each host's GET or selector list is answered from those lists with the API server's own selector rules;
every other GET (nodes, cluster-wide pods, events, an HTTPRoute, a log) is sent once per run, and the clock is
read once, so every check of the run judges one instant as it judges one read. Writes raise: a snapshot is for
runs that never write — unless made with ``writes=True`` (the deploys: pyinfra 3.10 keeps no fact cache, so each
operation of a restore re-read the Deployment, its ReplicaSets and pods). Then a write goes to the cluster and
renews what it may have changed (a ReplicaSet's annotations: that collection and the clock; anything else:
every read), and ``live()`` is the base client, for what must see the cluster as it is now: the guarded
write's re-read of its basis and the rollout wait.

Hosts run as concurrent greenlets: the first host to need a read makes it while the others wait for it.
Every answer is a fresh copy (thawed from ``marshal`` bytes), so no host's code can change what another reads.
"""

from __future__ import annotations

import marshal
import re
import threading
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import unquote

from vllm_remedy.kube.client import KubeClient, T
from vllm_remedy.kube.errors import KubeError, NotFoundError
from vllm_remedy.kube.selectors import matches, parse_selector

#: Collections read once per namespace: (API prefix, resource) → the kind of their items.
LISTED = {("/apis/apps/v1", "deployments"): "Deployment", ("/apis/apps/v1", "replicasets"): "ReplicaSet",
          ("/api/v1", "pods"): "Pod"}
_PATH = re.compile(r"^(?P<prefix>/api/v1|/apis/apps/v1)/namespaces/(?P<ns>[^/]+)/(?P<res>[a-z]+)(?:/(?P<name>[^/]+))?$")


def _frozen(value: Any) -> bytes:
    """Decoded JSON kept as ``marshal`` bytes: each host thaws its own copy (~6x faster than a recursive copy)."""
    return marshal.dumps(value)


def _thaw(blob: bytes) -> Any:
    return marshal.loads(blob)


class Snapshot(KubeClient):
    """``base``'s cluster, read once: namespaced lists shared, other GETs memoised, writes refused."""

    def __init__(self, base: KubeClient, *, writes: bool = False, epoch: Callable[[], Any] | None = None) -> None:
        """``epoch``: when its value changes, every read is renewed (pyinfra's execution after the plan the user
        approved at the prompt: that may have been minutes ago)."""
        super().__init__(base.api, context=base.context, source=base.source, timeout=base.timeout,
                         retry=base.retry, sleep=base._sleep)
        self._base, self._writes = base, writes
        self._epoch = epoch or (lambda: None)
        self._seen_epoch = self._epoch()
        self._guard = threading.Lock()
        self._locks: dict[Any, threading.Lock] = {}
        self._answers: dict[Any, tuple[bool, Any]] = {}

    def _once(self, key: Any, read: Callable[[], Any]) -> Any:
        """``read()``'s answer (or its KubeError) the first time ``key`` is asked for; the same answer afterwards."""
        epoch = self._epoch()
        if epoch != self._seen_epoch:
            self._seen_epoch = epoch
            self.renew()
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            if key not in self._answers:
                try:
                    self._answers[key] = (True, read())
                except KubeError as exc:
                    self._answers[key] = (False, exc)
            ok, answer = self._answers[key]
        if not ok:
            raise answer
        return answer

    def request(self, method: str, path: str, *, query: Sequence[tuple[str, str]] | None = None,
                body: Any = None, content_type: str = "application/json", expect_json: bool = True,
                timeout: float | tuple[float, float] | None = None) -> Any:
        """GETs from the snapshot (namespaced Deployments, ReplicaSets, pods from one list each); others raise."""
        if method != "GET":
            if not self._writes:
                raise KubeError(f"{self.context}: {method} {path}: refused: this run only reads (a read snapshot)")
            try:
                return self._base.request(method, path, query=query, body=body, content_type=content_type,
                                          expect_json=expect_json, timeout=timeout)
            finally:  # even a write whose answer was lost may have landed
                self.renew(path)
        query = list(query or [])
        found = _PATH.match(path)
        where = (found["prefix"], found["res"]) if found else None
        if found and where in LISTED and all(k == "labelSelector" for k, _ in query) and len(query) <= 1:
            try:
                return self._from_list(found["prefix"], found["ns"], found["res"], found["name"], query)
            except KubeError as exc:
                if exc.status != 403:
                    raise
                # RBAC may allow get but not list: fall back to this exact request, still once per run
        return _thaw(self._once(("GET", path, tuple(query), expect_json),
                                lambda: _frozen(super(Snapshot, self).request("GET", path, query=query,
                                                                              expect_json=expect_json,
                                                                              timeout=timeout))))

    def _listing(self, prefix: str, namespace: str, resource: str) -> list[tuple[str, dict[str, str], bytes]]:
        """Every object of ``resource`` in ``namespace`` as (name, labels, frozen object), the object with the
        ``apiVersion``/``kind`` a GET would carry."""
        path = f"{prefix}/namespaces/{namespace}/{resource}"

        def read() -> list[tuple[str, dict[str, str], bytes]]:
            answer = super(Snapshot, self).request("GET", path) or {}
            version, kind = prefix.removeprefix("/apis/").removeprefix("/api/"), LISTED[(prefix, resource)]
            out = []
            for item in answer.get("items") or []:
                meta = item.get("metadata") or {}
                out.append((meta.get("name"), meta.get("labels") or {},
                            _frozen({"apiVersion": version, "kind": kind, **item})))
            return out

        return self._once(("LIST", path), read)

    def _from_list(self, prefix: str, namespace: str, resource: str, name: str | None,
                   query: list[tuple[str, str]]) -> Any:
        items = self._listing(prefix, namespace, resource)
        if name is not None:
            wanted = unquote(name)
            for item_name, _labels, blob in items:
                if item_name == wanted:
                    return _thaw(blob)
            group = "" if prefix == "/api/v1" else ".apps"
            message = f'{resource}{group} "{wanted}" not found'
            raise NotFoundError(f"{self.context}: GET {prefix}/namespaces/{namespace}/{resource}/{name}: HTTP 404: "
                                f"{message}", status=404, reason="NotFound",
                                body={"kind": "Status", "status": "Failure", "message": message,
                                      "reason": "NotFound", "code": 404})
        selector = parse_selector(query[0][1]) if query else {}
        chosen = [_thaw(blob) for _name, labels, blob in items if matches(selector, labels)]
        return {"apiVersion": prefix.removeprefix("/apis/").removeprefix("/api/"),
                "kind": f"{LISTED[(prefix, resource)]}List", "items": chosen}

    def live(self) -> KubeClient:
        """The base client: reads the cluster as it is now (a guarded write's basis, a rollout wait)."""
        return self._base

    def renew(self, path: str | None = None) -> None:
        """Forget what a change at ``path`` may have made stale: after a write to a ReplicaSet (our annotations:
        no controller acts on them) its collection, the clock and what was derived; otherwise every read."""
        found = _PATH.match(path or "")
        keep = found is not None and found["res"] == "replicasets"
        collection = f"{found['prefix']}/namespaces/{found['ns']}/replicasets" if keep and found else ""

        def stale(key: Any) -> bool:
            if not keep or key[0] in ("TIME", "DERIVED"):
                return True
            return isinstance(key[1], str) and key[1].startswith(collection)

        with self._guard:
            for key in [k for k in self._answers if stale(k)]:
                del self._answers[key]
                self._locks.pop(key, None)

    def derived(self, key: str, compute: Callable[[], T]) -> T:
        """``compute()`` once per run, the same object for every host (read-only: see ``KubeClient.derived``)."""
        return self._once(("DERIVED", key), compute)

    def server_time(self) -> float:
        """The cluster's clock, read once: every check of the run judges the instant its reads were made."""
        return float(self._once(("TIME",), super().server_time))
