"""The kubelet's side of a pod deletion: SIGTERM and the grace period, the final delete, forgetting the pod.

Kept apart from the container lifecycle: once a pod is deleting, no container starts, restarts or turns Ready again
(each container's token moves on, so those timers do nothing); all that is left is stopping and letting go.
"""

from __future__ import annotations

import contextlib
import threading

from vllm_remedy.sim.controllers.containers import ContainerSim, LogRecord, PodSim
from vllm_remedy.sim.controllers.manager import Manager
from vllm_remedy.sim.controllers.termination import stop_seconds
from vllm_remedy.sim.store import ApiError, Store


class KubeletStop:
    """Mixin over the kubelet's ``_pods``/``_logs`` (guarded by ``_lock``), its status writes and its Events."""

    _pods: dict[str, PodSim]
    _logs: dict[str, LogRecord]
    _lock: threading.RLock
    manager: Manager
    store: Store

    def _publish(self, sim: PodSim) -> None: ...

    def _event(self, sim: PodSim, c: ContainerSim, type_: str, reason: str, message: str) -> None: ...

    def _terminate(self, namespace: str, name: str) -> None:
        """A graceful delete reached this pod: SIGTERM (unready at once, no more restarts), then, once vLLM
        has shut down or the grace period ran out, the pod object goes and with it the GPU it held."""
        pod = self.store.find("pods", namespace, name)
        if pod is None or not pod["metadata"].get("deletionTimestamp"):
            return
        uid = pod["metadata"]["uid"]
        with self._lock:
            sim = self._pods.get(uid)
            if sim is not None:
                if sim.terminating:
                    return
                sim.terminating = True
                for c in sim.containers.values():
                    c.token += 1  # stale restart, readiness and crash timers now do nothing
                    c.ready = False
                    if c.state == "running":
                        self._event(sim, c, "Normal", "Killing", f"Stopping container {c.name}")
        if sim is None:  # never started here: nothing to stop
            self._remove(namespace, name, uid)
            return
        self._publish(sim)
        self.manager.after(stop_seconds(pod), lambda: self._remove(namespace, name, uid))

    def _remove(self, namespace: str, name: str, uid: str) -> None:
        """The containers have stopped: the kubelet's final delete of the pod object."""
        with self._lock:
            sim = self._pods.get(uid)
            for c in sim.containers.values() if sim is not None else ():
                c.state = "terminated"  # already reported as stopping; _gone must not say it again
        pod = self.store.find("pods", namespace, name)
        if pod is not None and pod["metadata"].get("uid") == uid:
            with contextlib.suppress(ApiError):
                self.store.delete("pods", namespace, name)

    def _gone(self, namespace: str, uid: str) -> None:
        with self._lock:
            sim = self._pods.pop(uid, None)
            if sim is None:
                return
            for c in sim.containers.values():
                c.token += 1
                if c.state == "running":
                    self._event(sim, c, "Normal", "Killing", f"Stopping container {c.name}")
                for cid in (c.container_id, (c.last_terminated or {}).get("containerID", "")):
                    self._logs.pop(cid, None)
