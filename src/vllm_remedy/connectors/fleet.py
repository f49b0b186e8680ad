"""What the hosts of one read-only run share: a read snapshot per cluster and each policy file read once.

Why: a fleet check connects hundreds of ``@k8s`` hosts in one process. Per host, connecting loaded the
kubeconfig (YAML), opened its own connection pool, parsed the policy file and everything it extends (YAML
again) and read its Deployment — CPU and requests that are the same for every Deployment of a cluster.
A run that never writes (``vllm-remedy drift``) hands one ``FleetReads`` to every connector before it
connects; runs that write (the deploys, ``expire``) never do, so their reads stay fresh and their writes guarded.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from vllm_remedy.errors import UserError
from vllm_remedy.kube.client import KubeClient
from vllm_remedy.kube.snapshot import Snapshot


class FleetReads:
    """One ``Snapshot`` client per (context, kubeconfig) and one loaded policy per host data value, for one run."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._clients: dict[tuple[str | None, str | None], tuple[bool, Any]] = {}
        self._policies: dict[str, tuple[bool, Any]] = {}

    def client(self, context: str | None, kubeconfig: str | None) -> Snapshot:
        """The run's read snapshot of ``context`` (kubeconfig loaded once; a UserError is kept and raised again)."""
        return self._once(self._clients, (context, kubeconfig),
                          lambda: Snapshot(KubeClient.for_context(context, kubeconfig)))

    def policy(self, value: str, load: Callable[[], Any]) -> Any:
        """The policy (or directory of policies) host data ``policy: value`` names, loaded once by ``load``."""
        return self._once(self._policies, value, load)

    def _once(self, cache: dict[Any, tuple[bool, Any]], key: Any, load: Callable[[], Any]) -> Any:
        with self._lock:  # loading is local work (files, YAML): holding the one lock is cheaper than racing
            if key not in cache:
                try:
                    cache[key] = (True, load())
                except UserError as exc:
                    cache[key] = (False, exc)
            ok, value = cache[key]
        if not ok:
            raise value
        return value

    def close(self) -> None:
        """Close every connection pool the run opened."""
        with self._lock:
            clients = [c for ok, c in self._clients.values() if ok]
            self._clients.clear()
        for client in clients:
            try:
                client.api.close()
            except Exception:  # closing a pool must never fail a finished run
                logging.getLogger(__name__).debug("closing the API client failed", exc_info=True)
