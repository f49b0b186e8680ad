"""The kubelet's in-memory view of one pod's containers, and the status and logs it derives from it.

Kept apart from the kubelet's event handling so the status shape (what ``kubectl get pod`` and the
runbook's crash-loop checks read) is in one place: state/lastState/restartCount/ready/started and the
pod conditions, with lastTransitionTime preserved while a condition keeps its value.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from typing import Any

from vllm_remedy.sim.runtime import ContainerRun, LogLine

Obj = dict[str, Any]


@dataclass
class LogRecord:
    """Output of one container instance (one containerID); lines appear as simulated time passes."""

    lines: list[LogLine]
    started: float
    ended: float | None = None
    tail: tuple[str, ...] = ()
    frozen: str | None = None  # restored from a snapshot: the full text, no timing

    def text(self, now: float, timestamps: bool = False) -> str:
        """What ``kubectl logs`` sees at ``now``: only lines whose simulated time has come, plus the exit
        tail once the instance ended, so a read mid-startup stops where vLLM would be. With ``timestamps``
        each line starts with its simulated time in RFC 3339 with nanoseconds, as the kubelet writes them."""
        if self.frozen is not None:  # restored: the lines' times are lost; the instance's start stands in
            out = [(self.started, line) for line in self.frozen.splitlines()]
        else:
            until = (self.ended if self.ended is not None else now) - self.started
            out = [(self.started + line.offset, line.text) for line in self.lines if line.offset <= until + 1e-9]
            if self.ended is not None:
                out.extend((self.ended, line) for line in self.tail)
        if not timestamps:
            return "".join(f"{line}\n" for _, line in out)
        return "".join(f"{nano_stamp(at)} {line}\n" for at, line in out)


def nano_stamp(at: float) -> str:
    """RFC 3339 with nanoseconds (``--timestamps``' format)."""
    whole = int(at // 1)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{round((at - whole) * 1e9):09d}Z"


@dataclass
class ContainerSim:
    """One container of a pod: the current instance plus what kubelet remembers of the last one."""

    name: str
    spec: Obj
    restart_count: int = 0
    state: str = "waiting"  # waiting | running | terminated
    waiting_reason: str = "ContainerCreating"
    waiting_message: str = ""
    run: ContainerRun | None = None
    container_id: str = ""
    started_at: float = 0.0
    ready: bool = False
    started: bool = False
    terminated: Obj | None = None
    last_terminated: Obj | None = None
    backoff: float = 0.0
    last_start: float = 0.0
    token: int = 0  # bumped on every transition so stale timers know to do nothing


@dataclass
class PodSim:
    """The kubelet's own memory of one pod, kept outside the store as a real kubelet's is; ``deployment``
    names the owner whose offered load the runtime reads."""

    uid: str
    namespace: str
    name: str
    node: str
    host_ip: str
    start_time: str
    containers: dict[str, ContainerSim] = field(default_factory=dict)
    pod_ip: str = ""
    sandbox_ready: bool = False
    deployment: str = ""
    terminating: bool = False  # a graceful delete has stopped it; the object goes when vLLM has exited


def image_id(image: str) -> str:
    """A containerd-style imageID (repo normalised to docker.io/library/…, @sha256) derived from the
    image string, so it stays stable across restarts and changes only with the image."""
    digest = hashlib.sha256(image.encode()).hexdigest()
    repo = image.rsplit(":", 1)[0] if ":" in image.rsplit("/", 1)[-1] else image
    if "/" not in repo:
        repo = f"library/{repo}"
    if "." not in repo.split("/", 1)[0]:
        repo = f"docker.io/{repo}"
    return f"{repo}@sha256:{digest}"


def container_status(c: ContainerSim, stamp: Any) -> Obj:
    """containerStatuses[i] as the kubelet reports it; ``stamp`` renders simulated times."""
    if c.state == "running":
        state: Obj = {"running": {"startedAt": stamp(c.started_at)}}
    elif c.state == "terminated" and c.terminated is not None:
        state = {"terminated": dict(c.terminated)}
    else:
        waiting: Obj = {"reason": c.waiting_reason}
        if c.waiting_message:
            waiting["message"] = c.waiting_message
        state = {"waiting": waiting}
    out: Obj = {
        "name": c.name, "state": state,
        "lastState": {"terminated": dict(c.last_terminated)} if c.last_terminated else {},
        "ready": c.ready, "restartCount": c.restart_count, "image": c.spec.get("image", ""),
        "imageID": image_id(c.spec.get("image", "")) if c.container_id or c.last_terminated else "",
        "started": c.started,
    }
    if c.container_id and c.state != "waiting":
        out["containerID"] = c.container_id
    elif c.last_terminated:
        out["containerID"] = c.last_terminated.get("containerID", "")
    return out


def _cond(old: list[Obj], type_: str, status: str, now: str, reason: str = "", message: str = "") -> Obj:
    prior = next((c for c in old if c.get("type") == type_), None)
    since = prior["lastTransitionTime"] if prior and prior.get("status") == status else now
    cond: Obj = {"type": type_, "status": status, "lastProbeTime": None, "lastTransitionTime": since}
    if reason:
        cond["reason"] = reason
    if message:
        cond["message"] = message
    return cond


def pod_status(sim: PodSim, old: Obj, now: str, stamp: Any, restart_policy: str) -> Obj:
    """The full pod status from the kubelet's view, keeping transition times that did not move."""
    containers = list(sim.containers.values())
    conds = old.get("conditions") or []
    unready = [c.name for c in containers if not c.ready]
    ready = "False" if unready else "True"
    reason = "ContainersNotReady" if unready else ""
    message = f"containers with unready status: [{' '.join(unready)}]" if unready else ""
    scheduled = next((c for c in conds if c.get("type") == "PodScheduled"), None) or _cond(
        conds, "PodScheduled", "True", now)
    conditions = [
        _cond(conds, "PodReadyToStartContainers", "True" if sim.sandbox_ready else "False", now),
        _cond(conds, "Initialized", "True", now),
        _cond(conds, "Ready", ready, now, reason, message),
        _cond(conds, "ContainersReady", ready, now, reason, message),
        scheduled,
    ]
    status: Obj = {"phase": _phase(containers, restart_policy), "conditions": conditions,
                   "hostIP": sim.host_ip, "hostIPs": [{"ip": sim.host_ip}] if sim.host_ip else []}
    if sim.pod_ip:
        status["podIP"] = sim.pod_ip
        status["podIPs"] = [{"ip": sim.pod_ip}]
    status["startTime"] = sim.start_time
    status["containerStatuses"] = [container_status(c, stamp) for c in containers]
    if old.get("qosClass"):
        status["qosClass"] = old["qosClass"]
    return status


def _phase(containers: list[ContainerSim], restart_policy: str) -> str:
    if not containers or all(c.state == "waiting" and not c.last_terminated and c.restart_count == 0
                             for c in containers):
        return "Pending"
    if restart_policy != "Always" and all(c.state == "terminated" for c in containers):
        codes = [int((c.terminated or {}).get("exitCode", 1)) for c in containers]
        if restart_policy == "Never" or all(code == 0 for code in codes):
            return "Succeeded" if all(code == 0 for code in codes) else "Failed"
    return "Running"
