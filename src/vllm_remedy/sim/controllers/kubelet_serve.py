"""What the apiserver proxies to the kubelet: ``pods/log`` and ``pods/proxy``, plus log persistence.

Kept apart from the container lifecycle: these run on API threads and only read kubelet state,
and their error texts are the apiserver's (kubectl prints them verbatim).
"""

from __future__ import annotations

import threading
from typing import Any

from vllm_remedy.sim.clock import Clock
from vllm_remedy.sim.controllers.containers import ContainerSim, LogRecord, PodSim
from vllm_remedy.sim.controllers.manager import Manager
from vllm_remedy.sim.runtime import Exit, HttpReply, exit_reason
from vllm_remedy.sim.store import ApiError

Obj = dict[str, Any]


def _bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


class KubeletServer:
    """Mixin over the kubelet's ``_pods``/``_logs`` (guarded by ``_lock``)."""

    _pods: dict[str, PodSim]
    _logs: dict[str, LogRecord]
    _lock: threading.RLock
    clock: Clock
    manager: Manager

    def _exited(self, uid: str, name: str, token: int, exit_: Exit) -> None: ...

    def read_log(self, pod: Obj, container: str | None, previous: bool, timestamps: bool = False) -> str:
        """``pods/log``: the current or ``--previous`` instance's output by containerID, or the apiserver's
        400 texts that kubectl prints verbatim when there is none."""
        name = pod["metadata"]["name"]
        names = [c["name"] for c in pod.get("spec", {}).get("containers") or []]
        if container is None:
            if len(names) != 1:
                raise _bad_request(f"a container name must be specified for pod {name}, "
                                   f"choose one of: [{' '.join(names)}]")
            container = names[0]
        if container not in names:
            raise _bad_request(f"container {container} is not valid for pod {name}")
        with self._lock:
            sim = self._pods.get(pod["metadata"].get("uid", ""))
            c = sim.containers.get(container) if sim else None
            if c is None:  # not (yet) adopted by the kubelet, e.g. just restored: trust the pod status
                c = _from_status(pod, container)
            if c is None:
                if previous:
                    raise _bad_request(f'previous terminated container "{container}" in pod "{name}" not found')
                if not pod.get("spec", {}).get("nodeName"):
                    return ""
                raise _bad_request(f'container "{container}" in pod "{name}" is waiting to start: ContainerCreating')
            if previous:
                cid = (c.last_terminated or {}).get("containerID", "")
                if not cid:
                    raise _bad_request(f'previous terminated container "{container}" in pod "{name}" not found')
            elif c.state in ("running", "terminated"):
                cid = c.container_id
            elif c.last_terminated:
                cid = c.last_terminated.get("containerID", "")
            else:
                raise _bad_request(f'container "{container}" in pod "{name}" is waiting to start: '
                                   f"{c.waiting_reason or 'ContainerCreating'}")
            record = self._logs.get(cid)
            return record.text(self.clock.now(), timestamps) if record else ""

    def end(self, pod: Obj, container: str, code: int) -> None:
        """The container's main process ended on its own (an attached shell its user left): the kubelet records
        the exit as any other, on its own thread."""
        uid = pod["metadata"].get("uid", "")
        with self._lock:
            sim = self._pods.get(uid)
            c = sim.containers.get(container) if sim else None
            if c is None or c.state != "running":
                return
            token = c.token
        self.manager.after(0.0, lambda: self._exited(uid, container, token, Exit(0.0, code, exit_reason(code))))

    def proxy(self, pod: Obj, port: int | str, path: str) -> HttpReply:
        """``pods/proxy``: forward to the container exposing ``port`` (number or name), else the first one;
        503 connection refused while nothing listens, as the apiserver answers."""
        with self._lock:
            sim = self._pods.get(pod["metadata"].get("uid", ""))
            target = None
            number = str(port)
            for c in (sim.containers.values() if sim else []):
                for p in c.spec.get("ports") or []:
                    if str(p.get("containerPort")) == number or p.get("name") == number:
                        target = c
                        number = str(p.get("containerPort"))
            if sim is not None and target is None and sim.containers:
                target = next(iter(sim.containers.values()))
            ip = sim.pod_ip if sim else ""
            if sim is None or target is None or target.state != "running" or target.run is None \
                    or target.run.http is None:
                body = f"error trying to reach service: dial tcp {ip}:{number}: connect: connection refused"
                return 503, "text/plain; charset=utf-8", body.encode()
            handler = target.run.http
        return handler(path if path.startswith("/") else f"/{path}")

    def gpu_memory(self, node: str) -> dict[tuple[str, str], float]:
        """(namespace, pod) → GiB its running containers hold on each of its GPUs right now, for the node's
        GPU telemetry (DCGM exporter); a container between crashes holds nothing."""
        out: dict[tuple[str, str], float] = {}
        with self._lock:
            for sim in self._pods.values():
                if sim.node != node:
                    continue
                held = sum(c.run.gpu_gib for c in sim.containers.values()
                           if c.state == "running" and c.run is not None)
                out[(sim.namespace, sim.name)] = held
        return out

    # -- persistence -----------------------------------------------------------------------------

    def snapshot_logs(self) -> Obj:
        """Every instance's log as of now, keyed by containerID, so a restarted sim still serves ``--previous``."""
        now = self.clock.now()
        with self._lock:
            return {cid: record.text(now) for cid, record in self._logs.items()}

    def restore_logs(self, logs: Obj) -> None:
        """Load snapshotted logs as frozen text: their timing is lost, what kubectl reads is not."""
        with self._lock:
            for cid, text in logs.items():
                self._logs[cid] = LogRecord(lines=[], started=0.0, ended=0.0, frozen=str(text))


def _from_status(pod: Obj, name: str) -> ContainerSim | None:
    for cs in (pod.get("status") or {}).get("containerStatuses") or []:
        if cs.get("name") != name:
            continue
        state = cs.get("state") or {}
        c = ContainerSim(name=name, spec={}, last_terminated=(cs.get("lastState") or {}).get("terminated"))
        c.state = "running" if "running" in state else "terminated" if "terminated" in state else "waiting"
        c.container_id = cs.get("containerID", "")
        c.waiting_reason = (state.get("waiting") or {}).get("reason", "")
        return c
    return None
