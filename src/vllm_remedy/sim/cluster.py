"""One simulated Kubernetes cluster: a store plus the control plane that makes its objects live.

The HTTP layer serves ``cluster.store`` and calls ``read_log`` / ``proxy`` for the two subresources
the kubelet answers in a real cluster (``pods/log``, ``pods/proxy``). Everything else a user sees —
ReplicaSets, pods, scheduling, crash loops, rollout conditions — is written into the store by the
controllers started with ``start()``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from vllm_remedy.sim.clock import Clock
from vllm_remedy.sim.container_exec import CommandRuntime, ContainerFiles, exec_in, is_finite_command
from vllm_remedy.sim.controllers.deployment import DeploymentController
from vllm_remedy.sim.controllers.events import EventRecorder
from vllm_remedy.sim.controllers.inferenceservice import InferenceServiceController
from vllm_remedy.sim.controllers.kubelet import Kubelet
from vllm_remedy.sim.controllers.leaderworkerset import LWS, LeaderWorkerSetController
from vllm_remedy.sim.controllers.manager import Manager, wait_until
from vllm_remedy.sim.controllers.nodes import NodeReporter
from vllm_remedy.sim.controllers.replicaset import ReplicaSetController
from vllm_remedy.sim.controllers.scheduler import Scheduler
from vllm_remedy.sim.controllers.statefulset import StatefulSetController
from vllm_remedy.sim.dcgm_exporter import DcgmExporterRuntime, is_exporter
from vllm_remedy.sim.endpoints import EndpointsController
from vllm_remedy.sim.runtime import PlainRuntime, Runtime, RuntimeChooser
from vllm_remedy.sim.seed import apply_seed, seed_reality
from vllm_remedy.sim.store import ApiError, Event, Store, not_found
from vllm_remedy.sim.vllm_pod.reality import Reality
from vllm_remedy.sim.vllm_pod.runtime import VllmRuntime

Obj = dict[str, Any]


class Cluster:
    """A named cluster: ``store`` (objects), ``clock`` (simulated time), controllers, runtime.

    ``runtime`` decides what containers do: unless given, vLLM containers run the vLLM simulator (they
    start or crash as the memory model predicts, moved by its measured error unless ``reality`` is exact, in
    their version's log format), NVIDIA's dcgm-exporter
    image serves the node's GPU telemetry (``sim.dcgm_exporter``) and every other container the
    ``PlainRuntime``. Tests that need bare containers pass ``runtime=PlainRuntime()``.
    Environment knobs that no Kubernetes object carries — GPU memory
    held by processes outside Kubernetes, offered load — live in ``node_gpu_used_mib`` and ``load``.
    """

    def __init__(
        self, name: str = "default", *, clock: Clock | None = None, speed: float = 60.0,
        store: Store | None = None, runtime: Runtime | None = None, reality: Reality | None = None,
    ) -> None:
        self.name = name
        self.clock = clock or (store.clock if store is not None else Clock(speed=speed))
        self.store = store or Store(clock=self.clock, name=name)
        self.files = ContainerFiles()  # what `kubectl cp` put into containers
        self.runtime: Runtime = runtime or VllmRuntime(self.clock, self.store, fallback=RuntimeChooser(
            [(is_exporter, DcgmExporterRuntime(self)), (is_finite_command, CommandRuntime(self, self.files))],
            PlainRuntime()), reality=reality)
        self.node_gpu_used_mib: dict[str, int] = {}
        self.load: dict[tuple[str, str], float] = {}  # (namespace, deployment) → concurrent requests
        self._lock = threading.Lock()
        self.manager = Manager(self.clock)
        self.events = EventRecorder(self.store, self.clock)
        self.deployments = DeploymentController(self.store, self.clock, self.manager, self.events)
        self.replicasets = ReplicaSetController(self.store, self.clock, self.manager, self.events)
        self.statefulsets = StatefulSetController(self.store, self.clock, self.manager, self.events)
        self.leaderworkersets = LeaderWorkerSetController(self.store, self.clock, self.manager, self.events)
        self.inferenceservices = InferenceServiceController(self.store, self.clock, self.manager,
                                                            self.deployments.rolled_out)
        self.scheduler = Scheduler(self.store, self.clock, self.manager, self.events)
        self.kubelet = Kubelet(self, self.manager, self.events)
        self.node_reporter = NodeReporter(self.store, self.clock, self.manager)
        self.endpoints = EndpointsController(self.store, self.manager)  # Services → Endpoints, EndpointSlices
        self.store.subscribe(self._on_change)
        self._started = False

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the controller thread and pick up every object already in the store (after restore)."""
        if self._started:
            return
        self._started = True
        self.manager.start()
        self.resync()

    def stop(self) -> None:
        """Stop the controller thread only (``start`` resumes it): the store stays readable, so a snapshot
        taken afterwards is a still image."""
        self._started = False
        self.manager.stop()

    def resync(self) -> None:
        """Queue every object for reconciliation, as controllers do on start-up (informer list)."""
        for resource in ("nodes", "deployments.apps", "replicasets.apps", "statefulsets.apps", LWS, "pods",
                         "inferenceservices.serving.kserve.io"):
            for obj in self.store.list(resource)[0]:
                meta = obj["metadata"]
                self._route(resource, meta.get("namespace", ""), meta["name"], obj, "ADDED")
        self.endpoints.resync()

    def _on_change(self, event: Event) -> None:
        meta = event.object.get("metadata", {})
        self._route(event.resource, event.namespace, meta.get("name", ""), event.object, event.type)

    def _route(self, resource: str, namespace: str, name: str, obj: Obj, kind: str) -> None:
        """Map a store change to the controllers that watch it (called under the store lock)."""
        if resource == "deployments.apps":
            self.deployments.on_deployment(namespace, name, obj, kind)
            self.inferenceservices.on_deployment(namespace, obj)
        elif resource == "replicasets.apps":
            self.replicasets.on_replicaset(namespace, name, obj, kind)
            self.deployments.on_owned(namespace, obj)
        elif resource == "statefulsets.apps":
            self.statefulsets.on_statefulset(namespace, name, obj, kind)
        elif resource == LWS:
            self.leaderworkersets.on_leaderworkerset(namespace, name, obj, kind)
        elif resource == "inferenceservices.serving.kserve.io":
            self.inferenceservices.on_inferenceservice(namespace, name, obj, kind)
        elif resource == "pods":
            self.replicasets.on_pod(namespace, obj, kind)
            self.statefulsets.on_pod(namespace, obj, kind)
            self.leaderworkersets.on_pod(namespace, obj, kind)
            self.scheduler.on_pod(namespace, name, obj, kind)
            self.kubelet.on_pod(namespace, name, obj, kind)
            if kind == "DELETED":
                self.deployments.on_pod_gone(namespace, obj)
                self.files.forget(str(obj["metadata"].get("uid", "")))  # what `kubectl cp` put there goes too
        elif resource == "nodes":
            self.scheduler.on_node()
            self.node_reporter.on_node(name, obj, kind)

    # -- what the kubelet serves through the apiserver --------------------------------------------

    def read_log(self, namespace: str, pod: str, container: str | None = None, previous: bool = False,
                 timestamps: bool = False) -> str:
        """``GET pods/{pod}/log``: the container's output (each line led by its time with ``timestamps``); 400 as
        real kube when there is none."""
        obj = self.store.get("pods", namespace, pod)
        return self.kubelet.read_log(obj, container, previous, timestamps)

    def proxy(self, namespace: str, pod: str, port: int | str, path: str) -> tuple[int, str, bytes]:
        """``pods/{pod}:{port}/proxy/{path}``: what the container's HTTP server answers."""
        obj = self.store.get("pods", namespace, pod)
        return self.kubelet.proxy(obj, port, path)

    def exec(self, namespace: str, pod: str, container: str, command: list[str],
             stdin: str = "") -> tuple[int, str, str]:
        """``pods/exec``: (exit code, stdout, stderr) of ``command`` run in the container now."""
        return exec_in(self, self.store.get("pods", namespace, pod), container, command, stdin, self.files)

    def end_container(self, namespace: str, pod: str, container: str, code: int) -> None:
        """The container's process exited with ``code`` (an attached interactive shell was left)."""
        found = self.store.find("pods", namespace, pod)
        if found is not None:
            self.kubelet.end(found, container, code)

    # -- environment -----------------------------------------------------------------------------

    def set_load(self, namespace: str, deployment: str, concurrency: float) -> None:
        """Offered load (concurrent requests) on a deployment; runtimes read it through ContainerContext."""
        with self._lock:
            self.load[(namespace, deployment)] = concurrency
        self.kubelet.load_changed()

    def gpu_memory(self, node: str) -> dict[tuple[str, str], float]:
        """(namespace, pod) → GiB its running containers hold on each of its GPUs on ``node`` (GPU telemetry)."""
        return self.kubelet.gpu_memory(node)

    def set_node_gpu_used(self, node: str, mib: int) -> None:
        """GPU memory held on ``node`` by processes outside Kubernetes; felt by the next container start."""
        with self._lock:
            self.node_gpu_used_mib[node] = mib

    def load_for(self, namespace: str, deployment: str) -> float:
        """The ``set_load`` figure that runtimes fall back on when no load annotation names ``requests``."""
        with self._lock:
            return self.load.get((namespace, deployment), 0.0)

    def set_reality(self, reality: Reality) -> None:
        """How far vLLM starts stray from the estimate from the next container start on (seed key, ``--reality``)."""
        if isinstance(self.runtime, VllmRuntime):
            self.runtime.reality = reality

    @property
    def reality(self) -> Reality | None:
        """The vLLM runtime's reality (None when containers run on another runtime)."""
        return self.runtime.reality if isinstance(self.runtime, VllmRuntime) else None

    # -- seeds and waiting -----------------------------------------------------------------------

    def apply_seed(self, seed: Obj | str | Path, *, wait: bool = True, timeout: float = 30.0,
                   reality: Reality | None = None) -> None:
        """Create the seed's nodes, namespaces and objects and roll out its deployment histories.

        ``seed`` is a parsed seed, a path to a YAML file, or the name of a packaged seed ("runbook"); its
        ``reality`` keys, when set, apply to every vLLM start from now on; an explicit ``reality`` (a command
        line's) wins over them.
        With ``wait`` the call returns once every deployment's current revision is rolled out.
        """
        reality = reality or seed_reality(seed)
        if reality is not None:
            self.set_reality(reality)
        apply_seed(self, seed, wait=wait, timeout=timeout)

    def wait_for(self, predicate: Callable[[], bool], timeout: float = 10.0) -> bool:
        """Poll ``predicate`` for up to ``timeout`` real seconds (tests, ``sim up`` settling)."""
        return wait_until(predicate, timeout)

    def rolled_out(self, namespace: str, name: str) -> bool:
        """``kubectl rollout status`` would say "successfully rolled out" right now."""
        obj = self.store.find("deployments.apps", namespace, name)
        if obj is None:
            return False
        return self.deployments.rolled_out(obj)

    # -- persistence -----------------------------------------------------------------------------

    def snapshot(self) -> Obj:
        """Store objects plus container logs, so a restarted ``sim up`` still answers ``logs --previous``."""
        return {"store": self.store.snapshot(), "logs": self.kubelet.snapshot_logs()}

    def restore(self, snapshot: Obj) -> None:
        """Load a ``snapshot`` before ``start``, so the controllers adopt the restored pods with their restart
        counts and ``logs --previous`` still answers."""
        self.store.restore(snapshot.get("store", {}))
        self.kubelet.restore_logs(snapshot.get("logs", {}))


__all__ = ["ApiError", "Cluster", "not_found"]
