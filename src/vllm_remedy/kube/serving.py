"""Ready is not serving for a vLLM container with no readiness or startup probe: the wait looks for vLLM's own proof.

Kubernetes counts a container without a readiness probe Ready as soon as it starts, so ``kubectl rollout status``
(and the deploys' wait, which follows it) called a revision "successfully rolled out" seconds after the write while
vLLM was still loading its weights — and a revision that died a minute later had exited 0, and the responder had
recorded ``Remediated``. For such a container the wait also asks, of each live new pod, for evidence that the
server serves: the log's serving line (uvicorn's ``Application startup complete`` and its kin, as the progress line
reads the log: ``vllm.startup_log.stage``), else a 200 from ``/health`` through the API server's pods/proxy; and a
restart of that container before then is a crash, not a pod still starting. Containers with a probe keep kubelet's
word. Reads are cheap and never fail the wait: a bounded log tail, one attempt with a short timeout, each pod looked
at no more often than every ``look`` real seconds; a container instance once seen serving is not read again.

A container run with ``--headless`` (or ``--api-server-count 0``: vLLM 0.9.0 on, ``entrypoints/cli/serve.py`` runs
``run_headless``) is a data-parallel engine node with no API server: it never logs a serving line nor answers
``/health``, so waiting for either would fail every rollout at its timeout. All that can be known is that it
started and stays up: it counts as done once the same container instance has run ``SETTLE`` seconds (on the wait's
cluster clock) without a restart, and the verdict says so (``HEADLESS_NOTE``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from vllm_remedy.errors import UserError
from vllm_remedy.kube.client import KubeClient, RetryPolicy
from vllm_remedy.kube.errors import KubeError
from vllm_remedy.kube.health import ContainerHealth, PodHealth, pod_health
from vllm_remedy.vllm.cmdline import find_server
from vllm_remedy.vllm.startup_log.stage import SERVING, startup_stage

#: What the wait's verdict says when it held a Ready pod back for its serving line.
NOTE = "no readiness probe: waited for vLLM's serving line"
TAIL_LINES = 400
LIMIT_BYTES = 512 * 1024
READ_TIMEOUT = (3.0, 5.0)  # connect, read: a slow log must not hold up the wait
#: Real seconds between two looks at one pod's log (the wait's polls and events come far more often).
LOOK = 0.2
#: Seconds (the cluster's clock when the wait has one) a headless engine container must run, unrestarted, before
#: the wait counts it as started.
SETTLE = 30.0
HEADLESS_NOTE = ("--headless (no API server, nothing to serve): counted as started after {settle:g} s running "
                 "without a restart")


def headless(pod: Mapping[str, Any], container: str) -> bool:
    """Whether ``container`` runs vLLM with no API server (``--headless``, or ``--api-server-count 0``)."""
    try:
        flags = find_server(pod.get("spec") or {}, container).flags
    except UserError:
        return False
    return flags.get("headless", "false").lower() not in ("false", "0") or flags.get("api-server-count") == "0"


def unprobed(pod: Mapping[str, Any], container: str | None = None) -> str | None:
    """The name of the pod's vLLM container when it has neither a readiness nor a startup probe, else None
    (no vLLM container found: not ours to judge, the kubelet's Ready stands)."""
    spec = pod.get("spec") or {}
    try:
        name = find_server(spec, container).container_name
    except UserError:
        if container is None:
            return None
        name = container
    found = next((c for c in spec.get("containers") or [] if c.get("name") == name), None)
    if found is None or found.get("readinessProbe") or found.get("startupProbe"):
        return None
    return name


def port_of(pod: Mapping[str, Any], container: str) -> str:
    """The port vLLM listens on: its ``--port``, else the container's first declared port, else vLLM's 8000."""
    spec = pod.get("spec") or {}
    try:
        flagged = find_server(spec, container).flags.get("port", "")
    except UserError:
        flagged = ""
    if flagged.isdigit():
        return flagged
    c = next((c for c in spec.get("containers") or [] if c.get("name") == container), {})
    declared = next((str(p["containerPort"]) for p in c.get("ports") or [] if p.get("containerPort")), None)
    return declared or "8000"


class ServingGate:
    """Which live new pods are Ready but not yet proven serving, and which restarted on the way (module docstring)."""

    def __init__(self, client: KubeClient, namespace: str, container: str | None = None, look: float = LOOK,
                 real: Callable[[], float] = time.monotonic, settle: float = SETTLE,
                 now: Callable[[], float] | None = None) -> None:
        self.client = KubeClient(client.api, context=client.context, source=client.source, timeout=READ_TIMEOUT,
                                 retry=RetryPolicy(attempts=1))
        self.namespace, self.container, self.look, self.real = namespace, container, look, real
        self.used = False  # an unprobed vLLM pod was judged for its serving line: the verdict says so
        self._served: set[str] = set()  # containerIDs seen serving
        self._looked: dict[str, float] = {}  # pod name -> real time of its last look
        self._baseline: dict[tuple[str, str], int] = {}  # (pod uid, container) -> restarts when first seen
        self.settle, self.now = settle, now or real  # ``now``: the cluster's clock, which the settle time is on
        self._running_since: dict[str, float] = {}  # headless containerID -> real time first seen running
        self.headless = self.http = False  # which kinds of unprobed pod were judged: the verdict says how

    @property
    def NOTE(self) -> str:
        """What the verdict says about the pods it held (module docstring)."""
        return "; ".join([*([NOTE] if self.http or not self.headless else []),
                          *([HEADLESS_NOTE.format(settle=self.settle)] if self.headless else [])])

    def restarted(self, pods: Sequence[Mapping[str, Any]]) -> tuple[PodHealth, ContainerHealth] | None:
        """A live pod whose unprobed vLLM container restarted since the wait first saw it (for a pod with a probe
        kubelet's Ready and the crash-loop rule decide, as before)."""
        for pod in _live(pods):
            name = unprobed(pod, self.container)
            if name is None:
                continue
            health = pod_health(pod)
            c = next((c for c in health.containers if c.name == name), None)
            if c is None:
                continue
            base = self._baseline.setdefault((str(pod["metadata"].get("uid") or health.name), name), c.restarts)
            if c.restarts > base:
                return health, c
        return None

    def waiting(self, pods: Sequence[Mapping[str, Any]]) -> list[str]:
        """Names of the live pods whose unprobed vLLM container has not shown that it serves yet."""
        held = []
        for pod in _live(pods):
            name = unprobed(pod, self.container)
            if name is None:
                continue
            self.used = True
            status = next((s for s in (pod.get("status") or {}).get("containerStatuses") or []
                           if s.get("name") == name), None) or {}
            cid = str(status.get("containerID") or "")
            if cid and cid in self._served:
                continue
            pod_name = str(pod["metadata"].get("name") or "")
            if headless(pod, name):
                self.headless = True
                if "running" in (status.get("state") or {}) and cid and self._settled(cid):
                    self._served.add(cid)
                    continue
                held.append(pod_name)
                continue
            self.http = True
            if "running" in (status.get("state") or {}) and cid and self._due(pod_name) and self._serves(pod, name):
                self._served.add(cid)
                continue
            held.append(pod_name)
        return held

    def _settled(self, cid: str) -> bool:
        """A headless container instance has run ``settle`` seconds by ``now`` (a restart is a new containerID)."""
        now = self.now()
        since = self._running_since.setdefault(cid, now)
        return now - since >= self.settle

    def _due(self, pod: str) -> bool:
        now = self.real()
        if now - self._looked.get(pod, float("-inf")) < self.look:
            return False
        self._looked[pod] = now
        return True

    def _serves(self, pod: Mapping[str, Any], container: str) -> bool:
        """The log's serving line, else ``/health`` answering 200 through pods/proxy."""
        pod_name = str(pod["metadata"]["name"])
        try:
            text = self.client.pod_log(self.namespace, pod_name, container, tail_lines=TAIL_LINES,
                                       limit_bytes=LIMIT_BYTES)
            if startup_stage(text).stage == SERVING:
                return True
        except KubeError:
            pass
        path = KubeClient.object_path(self.namespace, "pods", pod_name, group="v1")
        try:  # ":" unescaped, as kubectl get --raw sends it; any non-2xx is a KubeError
            self.client.request("GET", f"{path}:{port_of(pod, container)}/proxy/health", expect_json=False)
        except KubeError:
            return False
        return True


def _live(pods: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [p for p in pods if not (p.get("metadata") or {}).get("deletionTimestamp")]
