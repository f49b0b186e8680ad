"""What a rollout wait shows while it waits: Ready/desired and the stage of the newest new pod.

A restore waits minutes for vLLM to load its weights, profile memory and capture CUDA graphs; this says
where the newest pod of the new ReplicaSet is, from its status while the kubelet has it (Pending and why,
scheduled, pulling the image) and from its log once vLLM runs (``vllm.startup_log.stage``), or how it
crashed. Reading is cheap and can never fail the wait: one pod's log, its last ``TAIL_LINES`` lines (at most
``LIMIT_BYTES``), one attempt with a short timeout; a read that fails keeps the stage already known.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vllm_remedy.errors import UserError
from vllm_remedy.kube.client import KubeClient, RetryPolicy
from vllm_remedy.kube.errors import KubeError
from vllm_remedy.kube.health import CRASH_LOOP, ContainerHealth, container_health, pod_health
from vllm_remedy.kube.serving import unprobed
from vllm_remedy.kube.wait import classify_log
from vllm_remedy.vllm.cmdline import find_server
from vllm_remedy.vllm.startup_log.failure import status_failure
from vllm_remedy.vllm.startup_log.stage import SERVING, STARTING, StartupStage, furthest, startup_stage

TAIL_LINES = 200  # a start's stage lines are far apart from each other only under DEBUG logging
LIMIT_BYTES = 256 * 1024  # tqdm writes its updates into one line; a cap on what one read may cost
READ_TIMEOUT = (3.0, 5.0)  # connect, read: a slow log must not hold up the wait it decorates
_PULL_FAILED = ("ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull", "RegistryUnavailable")


@dataclass(frozen=True)
class Progress:
    """One look at a rollout: Ready pods of the new ReplicaSet out of the desired replicas, and the newest
    new pod's stage (``pod`` is None while the new ReplicaSet has no live pod)."""

    ready: int
    desired: int
    pod: str | None
    stage: str

    def __str__(self) -> str:
        head = f"{self.ready}/{self.desired} Ready"
        return f"{head}; newest pod {self.pod}: {self.stage}" if self.pod else f"{head}; {self.stage}"


class ProgressReader:
    """Reads a rollout's progress from the pods a wait already listed, remembering per container instance the
    furthest stage its log showed and how each dead instance crashed (so a log is classified once)."""

    def __init__(self, client: KubeClient, namespace: str, container: str | None = None) -> None:
        self.client = KubeClient(client.api, context=client.context, source=client.source, timeout=READ_TIMEOUT,
                                 retry=RetryPolicy(attempts=1))
        self.namespace, self.container = namespace, container
        self._stages: dict[str, StartupStage] = {}  # containerID → furthest stage its log showed
        self._crashes: dict[str, str] = {}  # containerID of a dead instance → its failure class

    def read(self, deployment: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]) -> Progress:
        """Progress of ``deployment`` given the new ReplicaSet's ``pods`` (as ``kube.wait.new_pods`` lists them)."""
        desired = int((deployment.get("spec") or {}).get("replicas", 1) or 0)
        live = [p for p in pods if not (p.get("metadata") or {}).get("deletionTimestamp")]
        ready = sum(1 for p in live if pod_health(p).ready)
        if not live:
            return Progress(ready, desired, None, "no pod of the new ReplicaSet yet")
        newest = max(live, key=lambda p: (str(p["metadata"].get("creationTimestamp") or ""),
                                          str(p["metadata"].get("name") or "")))
        return Progress(ready, desired, str(newest["metadata"].get("name") or "?"), self.stage(newest))

    def stage(self, pod: Mapping[str, Any]) -> str:
        """The pod's stage: from its status until its vLLM container runs, then from that container's log."""
        health = pod_health(pod)
        if health.unschedulable:
            return f"Pending: unschedulable: {health.unschedulable}"
        if not health.node:
            return "Pending: waiting for the scheduler"
        name = self._container(pod)
        raw = next((s for s in (pod.get("status") or {}).get("containerStatuses") or [] if s.get("name") == name),
                   None)
        c = container_health(raw) if raw is not None else None
        if c is None or (c.state == "waiting" and c.waiting_reason in (None, "ContainerCreating", "PodInitializing")
                         and not c.restarts):
            return _before_start(pod, health.node, name, created=c is not None)
        if c.state == "waiting" and c.waiting_reason != CRASH_LOOP:  # ErrImagePull, CreateContainerConfigError…
            why = f"{c.waiting_reason}: {c.waiting_message or ''}".rstrip(": ")
            return f"pulling image failed: {why}" if c.waiting_reason in _PULL_FAILED else f"waiting: {why}"
        if c.ready and unprobed(pod, name) is None:  # without a readiness or startup probe Ready means started
            return "serving (Ready)"
        assert raw is not None
        if c.state == "terminated" or c.waiting_reason == CRASH_LOOP:
            why = self._crash(pod, name, raw, c)
            if c.waiting_reason == CRASH_LOOP:
                return f"crashed ({why}); CrashLoopBackOff before restart {c.restarts + 1}"
            return f"crashed ({why})"
        seen = self._log_stage(pod, name, raw)
        stage = str(seen)
        if c.ready and seen.stage != SERVING:
            stage += "; Ready without a readiness probe"
        if c.restarts:
            stage += f"; restart {c.restarts} after crashed ({self._crash(pod, name, raw, c)})"
        return stage

    def _container(self, pod: Mapping[str, Any]) -> str:
        """The vLLM container's name: as given, else the one whose argv runs vLLM, else the first."""
        if self.container:
            return self.container
        spec = pod.get("spec") or {}
        try:
            return find_server(spec).container_name
        except UserError:
            return str(((spec.get("containers") or [{}])[0]).get("name", ""))

    def _log_stage(self, pod: Mapping[str, Any], container: str, raw: Mapping[str, Any]) -> StartupStage:
        cid = str(raw.get("containerID") or "")
        seen = self._stages.get(cid)
        text = self._tail(pod, container, previous=False)
        if text is None:
            return seen or StartupStage(STARTING)
        now = furthest(seen, startup_stage(text))
        self._stages[cid] = now
        return now

    def _crash(self, pod: Mapping[str, Any], container: str, raw: Mapping[str, Any], c: ContainerHealth) -> str:
        """How the last dead instance ended: the pod status where only it knows (OOMKilled), else its log's class."""
        term = (raw.get("state") or {}).get("terminated") or (raw.get("lastState") or {}).get("terminated") or {}
        cid = str(term.get("containerID") or "")
        if cid in self._crashes:
            return self._crashes[cid]
        known = status_failure(c.exit_code, c.terminated_reason) is not None  # OOMKilled: no log to read
        text = None if known else self._tail(pod, container, previous=not c.terminated_now)
        failure = classify_log(text, c.exit_code, c.terminated_reason)[0]  # as the wait's verdict will name it
        why = failure if failure not in (None, "none") else f"exit {c.exit_code}"
        if cid:
            self._crashes[cid] = why
        return why

    def _tail(self, pod: Mapping[str, Any], container: str, *, previous: bool) -> str | None:
        try:
            return self.client.pod_log(self.namespace, str(pod["metadata"]["name"]), container or None,
                                       previous=previous, tail_lines=TAIL_LINES, limit_bytes=LIMIT_BYTES)
        except KubeError:
            return None


def _before_start(pod: Mapping[str, Any], node: str, container: str, created: bool) -> str:
    """Scheduled, container not yet created: the sandbox first, then the kubelet pulls the image. Without
    ``PodReadyToStartContainers`` (before Kubernetes 1.29) a container the kubelet reports as ContainerCreating
    is taken to be pulling; one it does not report yet, to be waiting for its sandbox."""
    sandbox = next((c for c in (pod.get("status") or {}).get("conditions") or []
                    if c.get("type") == "PodReadyToStartContainers"), None)
    if (sandbox is not None and sandbox.get("status") != "True") or (sandbox is None and not created):
        return f"scheduled on {node}"
    image = next((c.get("image") for c in (pod.get("spec") or {}).get("containers") or []
                  if c.get("name") == container), None)
    return f"pulling image {image}" if image else "pulling image"
