"""The kubelet: runs scheduled pods' containers through the cluster's runtime, in simulated time.

It owns what the runbook's step 1 and 2 read: restartCount, lastState.terminated (exit code and
reason), CrashLoopBackOff with kubelet's back-off (10 s doubling to 5 min; the first crash restarts at
once), the Ready condition, and each container instance's log, so ``logs --previous`` returns the
output of the instance that crashed. A container whose image its node lacks waits in ContainerCreating
while the image is pulled (``images``); one whose env names a missing ConfigMap/Secret or key waits in
CreateContainerConfigError, retried on the pod worker's 10 s back-off until the object appears.
"""

from __future__ import annotations

import contextlib
import copy
import secrets
import threading
from typing import Any

from vllm_remedy.sim.controllers.containers import ContainerSim, LogRecord, PodSim, pod_status
from vllm_remedy.sim.controllers.events import EventRecorder
from vllm_remedy.sim.controllers.images import Pulls, add_images, has_image, image_bytes
from vllm_remedy.sim.controllers.kubelet_serve import KubeletServer
from vllm_remedy.sim.controllers.kubelet_stop import KubeletStop
from vllm_remedy.sim.controllers.manager import Manager
from vllm_remedy.sim.controllers.probes import KILLED_EXIT_CODE, probe_failure_message, probe_kill
from vllm_remedy.sim.controllers.util import controller_ref, go_duration, internal_ip, pod_active
from vllm_remedy.sim.protocols import KubeletHost
from vllm_remedy.sim.runtime import ContainerContext, Exit
from vllm_remedy.sim.store import ApiError
from vllm_remedy.sim.vllm_pod.env import config_error

Obj = dict[str, Any]

SANDBOX_SECONDS = 1.0   # pod sandbox before the first container start (then the image, if the node lacks it)
FIRST_RESTART = 1.0     # the first crash restarts without back-off, after one kubelet sync
BACKOFF_START, BACKOFF_MAX = 10.0, 300.0
CONFIG_RETRY = 10.0     # kubelet's pod worker re-syncs a pod whose sync failed after its 10 s backOffPeriod
NEVER_STARTED = "1970-01-01T00:00:00Z"  # startedAt kubelet reports for a container whose process never ran (StartError)


class Kubelet(KubeletServer, KubeletStop):
    """All nodes' kubelets in one: containers keyed by pod uid, driven by the manager's timers."""

    def __init__(self, cluster: KubeletHost, manager: Manager, events: EventRecorder) -> None:
        self.cluster, self.manager, self.events = cluster, manager, events
        self.store, self.clock = cluster.store, cluster.clock
        self._pods: dict[str, PodSim] = {}
        self._logs: dict[str, LogRecord] = {}
        self._lock = threading.RLock()
        self._next_ip = 0
        self._pulls = Pulls()
        manager.register("kubelet", self.sync)
        manager.register("kubelet-gone", self._gone)
        manager.register("kubelet-terminate", self._terminate)

    # -- informer hooks --------------------------------------------------------------------------

    def on_pod(self, namespace: str, name: str, pod: Obj, kind: str) -> None:
        """Informer hook: bound, active pods get a kubelet sync; a deletion is queued by uid so the pod's
        containers stop and their logs are dropped."""
        if kind == "DELETED":
            self.manager.enqueue("kubelet-gone", namespace, pod["metadata"].get("uid", ""))
        elif pod["metadata"].get("deletionTimestamp"):
            self.manager.enqueue("kubelet-terminate", namespace, name)
        elif pod.get("spec", {}).get("nodeName") and pod_active(pod):
            self.manager.enqueue("kubelet", namespace, name)

    def load_changed(self) -> None:
        """Offered load moved: re-check running containers against it on the controller thread now, not at
        their next periodic check, so an OOM under load shows up promptly."""
        self.manager.after(0, self._check_all_loads)

    # -- pod lifecycle ---------------------------------------------------------------------------

    def sync(self, namespace: str, name: str) -> None:
        """Adopt a newly bound pod once per uid: build its containers (restart counts survive a snapshot
        restore) and start them after the sandbox delay."""
        pod = self.store.find("pods", namespace, name)
        if pod is None or not pod.get("spec", {}).get("nodeName") or pod["metadata"].get("deletionTimestamp"):
            return
        uid = pod["metadata"]["uid"]
        with self._lock:
            if uid in self._pods:
                return
            node = self.store.find("nodes", "", pod["spec"]["nodeName"]) or {}
            sim = PodSim(uid=uid, namespace=namespace, name=name, node=pod["spec"]["nodeName"],
                         host_ip=internal_ip(node), start_time=self.clock.timestamp(),
                         deployment=self._deployment_of(pod))
            old = pod.get("status") or {}
            statuses = {s.get("name"): s for s in old.get("containerStatuses") or []}
            for spec in pod["spec"].get("containers") or []:
                c = ContainerSim(name=spec["name"], spec=spec)
                prior = statuses.get(spec["name"])
                if prior:  # restored from a snapshot: keep the counters kubectl shows
                    c.restart_count = int(prior.get("restartCount", 0))
                    c.last_terminated = (prior.get("lastState") or {}).get("terminated")
                sim.containers[c.name] = c
            if old.get("startTime"):
                sim.start_time, sim.pod_ip = old["startTime"], old.get("podIP", "")
            self._pods[uid] = sim
        self._publish(sim)
        delay = 0.0 if old.get("podIP") else SANDBOX_SECONDS
        self.manager.after(delay, lambda: self._start_all(uid))

    def _deployment_of(self, pod: Obj) -> str:
        ref = controller_ref(pod)
        if ref is None or ref.get("kind") != "ReplicaSet":
            return ""
        rs = self.store.find("replicasets.apps", pod["metadata"]["namespace"], ref["name"])
        owner = controller_ref(rs) if rs else None
        return owner["name"] if owner and owner.get("kind") == "Deployment" else ""

    def _start_all(self, uid: str) -> None:
        with self._lock:
            sim = self._pods.get(uid)
            if sim is None or sim.terminating:
                return
            if not sim.pod_ip:
                self._next_ip += 1
                sim.pod_ip = f"10.244.{self._next_ip // 250}.{self._next_ip % 250 + 2}"
            sim.sandbox_ready = True
            node = self.store.find("nodes", "", sim.node) or {}
            for c in sim.containers.values():
                image = str(c.spec.get("image", ""))
                if has_image(node, image):
                    self._start(sim, c)
                else:
                    self._pull(sim, c, image)
        self._publish(sim)

    def _pull(self, sim: PodSim, c: ContainerSim, image: str) -> None:
        """The node lacks the image: the container stays in ContainerCreating until the pull is done."""
        now = self.clock.now()
        ready, waited = self._pulls.schedule(sim.node, image, now)
        self._event(sim, c, "Normal", "Pulling", f'Pulling image "{image}"')
        token = c.token
        self.manager.at(ready, lambda: self._pulled(sim.uid, c.name, token, image, ready - now - waited, ready - now))

    def _pulled(self, uid: str, name: str, token: int, image: str, took: float, total: float) -> None:
        with self._lock:
            sim = self._pods.get(uid)
        if sim is None:
            return
        with contextlib.suppress(ApiError):
            self.store.mutate("nodes", "", sim.node, lambda node: add_images(node, [image]), status=True)
        with self._lock:
            found = self._current(uid, name, token)
            if found is None or found[0].terminating:
                return
            self._start(sim, found[1], pulled=(f'Successfully pulled image "{image}" in {go_duration(took)} '
                                               f"({go_duration(total)} including waiting). Image size: "
                                               f"{image_bytes(image)} bytes."))
        self._publish(sim)

    def _start(self, sim: PodSim, c: ContainerSim, pulled: str | None = None) -> None:
        """Start a new instance of ``c``: ask the runtime what it does and arm its timers."""
        pod = self.store.find("pods", sim.namespace, sim.name)
        node = self.store.find("nodes", "", sim.node) or {}
        if pod is None:
            return
        if (error := config_error(c.spec, pod, self.store)) is not None:
            self._config_error(sim, c, error, pulled)
            return
        # One reading of the clock for the whole start: working out the run takes real time, which at 600x is
        # seconds of cluster time the log, startedAt and the timers must not disagree by.
        now = self.clock.now()
        ctx = ContainerContext(
            started=now, pod=pod, container=copy.deepcopy(c.spec), node=node, restart_count=c.restart_count,
            gpu_memory_used_by_others_mib=self.cluster.node_gpu_used_mib.get(sim.node, 0),
            load=lambda: self.cluster.load_for(sim.namespace, sim.deployment),
            extras={"pod_ip": sim.pod_ip},  # set with the sandbox, before the status that shows it is published
        )
        run = self.cluster.runtime.start(ctx)
        if run.exit is not None and run.exit.reason == "StartError":
            self._start_failed(sim, c, run.exit, now, pulled)
            return
        c.token += 1
        c.run, c.state, c.waiting_reason, c.waiting_message = run, "running", "", ""
        c.container_id = f"containerd://{secrets.token_hex(32)}"
        c.started_at = c.last_start = now
        c.terminated = None
        self._logs[c.container_id] = LogRecord(lines=list(run.log), started=now)
        probed = bool(c.spec.get("readinessProbe") or c.spec.get("startupProbe"))
        c.started = not c.spec.get("startupProbe")
        c.ready = not probed
        token = c.token
        if probed and run.ready_after is not None and (run.exit is None or run.ready_after < run.exit.after):
            self.manager.at(now + run.ready_after, lambda: self._became_ready(sim.uid, c.name, token))
        exit_ = run.exit
        kill = probe_kill(c.spec, run.ready_after)
        if kill is not None and (exit_ is None or kill[0] < exit_.after):
            self.manager.at(now + kill[0], lambda: self._probe_kill(sim.uid, c.name, token, kill[1]))
        elif exit_ is not None:
            self.manager.at(now + exit_.after, lambda: self._exited(sim.uid, c.name, token, exit_))
        if run.load_check is not None:
            self.manager.after(run.load_check_every, lambda: self._check_load(sim.uid, c.name, token, True))
        image = c.spec.get("image", "")
        self._event(sim, c, "Normal", "Pulled", pulled or f'Container image "{image}" already present on machine')
        self._event(sim, c, "Normal", "Created", f"Created container {c.name}")
        self._event(sim, c, "Normal", "Started", f"Started container {c.name}")

    def _start_failed(self, sim: PodSim, c: ContainerSim, exit_: Exit, now: float, pulled: str | None) -> None:
        """The runtime created the container but could not start its process (containerd's ``StartError``): it is
        never running, so no status shows it so (kubectl then reads its logs instead of attaching), and it is
        terminated at once with no start time, as kubelet reports a container that never started."""
        c.token += 1
        c.run, c.container_id = None, f"containerd://{secrets.token_hex(32)}"
        c.started_at = c.last_start = now
        self._logs[c.container_id] = LogRecord(lines=[], started=now)
        image = c.spec.get("image", "")
        self._event(sim, c, "Normal", "Pulled", pulled or f'Container image "{image}" already present on machine')
        self._event(sim, c, "Normal", "Created", f"Created container {c.name}")
        self._event(sim, c, "Warning", "Failed", f"Error: {exit_.message}")
        self._exited(sim.uid, c.name, c.token, exit_)

    def _config_error(self, sim: PodSim, c: ContainerSim, message: str, pulled: str | None) -> None:
        """generateContainerConfig failed: no container, no restart counted, the pod worker tries again later."""
        c.token += 1
        c.state, c.waiting_reason, c.waiting_message, c.ready, c.started = (
            "waiting", "CreateContainerConfigError", message, False, False)
        image = c.spec.get("image", "")
        self._event(sim, c, "Normal", "Pulled", pulled or f'Container image "{image}" already present on machine')
        self._event(sim, c, "Warning", "Failed", f"Error: {message}")
        token = c.token
        self.manager.after(CONFIG_RETRY, lambda: self._config_retry(sim.uid, c.name, token))

    def _config_retry(self, uid: str, name: str, token: int) -> None:
        with self._lock:
            found = self._current(uid, name, token)
            if found is None or found[0].terminating:
                return
            self._start(*found)
        self._publish(found[0])

    def _current(self, uid: str, name: str, token: int) -> tuple[PodSim, ContainerSim] | None:
        sim = self._pods.get(uid)
        c = sim.containers.get(name) if sim else None
        if sim is None or c is None or c.token != token:
            return None
        return sim, c

    def _became_ready(self, uid: str, name: str, token: int) -> None:
        with self._lock:
            found = self._current(uid, name, token)
            if found is None:
                return
            sim, c = found
            c.ready = c.started = True
        self._publish(sim)

    def _probe_kill(self, uid: str, name: str, token: int, kind: str) -> None:
        """A startup/liveness probe ran out of failures: kubelet kills and restarts the container."""
        with self._lock:
            found = self._current(uid, name, token)
            if found is None:
                return
            sim, c = found
            probe = c.spec.get(f"{kind.lower()}Probe") or {}
            self._event(sim, c, "Warning", "Unhealthy", probe_failure_message(kind, probe, sim.pod_ip))
            self._event(sim, c, "Normal", "Killing",
                        f"Container {c.name} failed {kind.lower()} probe, will be restarted")
            elapsed = self.clock.now() - c.started_at
        self._exited(uid, name, token, Exit(after=elapsed, code=KILLED_EXIT_CODE, reason="Error"))

    def _check_load(self, uid: str, name: str, token: int, again: bool) -> None:
        with self._lock:
            found = self._current(uid, name, token)
            if found is None or found[1].run is None or found[1].run.load_check is None:
                return
            sim, c = found
            run = c.run
            assert run is not None and run.load_check is not None
            crash = run.load_check(self.cluster.load_for(sim.namespace, sim.deployment)) if c.ready else None
        if crash is not None:
            self._exited(uid, name, token, crash)
        elif again:
            self.manager.after(run.load_check_every, lambda: self._check_load(uid, name, token, True))

    def _check_all_loads(self) -> None:
        with self._lock:
            targets = [(sim.uid, c.name, c.token) for sim in self._pods.values() for c in sim.containers.values()
                       if c.state == "running" and c.run is not None and c.run.load_check is not None]
        for uid, name, token in targets:
            self._check_load(uid, name, token, False)

    def _exited(self, uid: str, name: str, token: int, exit_: Exit) -> None:
        """The container process ended: record it, then restart per restartPolicy and back-off."""
        with self._lock:
            found = self._current(uid, name, token)
            if found is None:
                return
            sim, c = found
            now = self.clock.now()
            c.token += 1
            record = self._logs.get(c.container_id)
            if record is not None:
                record.ended, record.tail = now, exit_.log
            c.terminated = {"exitCode": exit_.code, "reason": exit_.reason,
                            "startedAt": NEVER_STARTED if exit_.reason == "StartError"
                            else self.clock.timestamp(c.started_at), "finishedAt": self.clock.timestamp(now),
                            "containerID": c.container_id}
            if exit_.message:
                c.terminated["message"] = exit_.message
            c.state, c.ready, c.started = "terminated", False, False
            policy = self._restart_policy(sim)
            restart = policy == "Always" or (policy == "OnFailure" and exit_.code != 0)
            if restart:
                if now - c.last_start > 2 * BACKOFF_MAX:
                    c.backoff = 0.0  # ran long enough: kubelet has forgotten earlier crashes
                token = c.token
                if c.backoff == 0:
                    c.backoff = BACKOFF_START
                    self.manager.after(FIRST_RESTART, lambda: self._restart(uid, name, token, False))
                else:
                    self.manager.after(FIRST_RESTART, lambda: self._back_off(uid, name, token))
        self._publish(sim)

    def _back_off(self, uid: str, name: str, token: int) -> None:
        with self._lock:
            found = self._current(uid, name, token)
            if found is None:
                return
            sim, c = found
            c.token += 1
            c.last_terminated, c.terminated = c.terminated, None
            c.state, c.waiting_reason = "waiting", "CrashLoopBackOff"
            c.waiting_message = (f"back-off {go_duration(c.backoff)} restarting failed container={c.name} "
                                 f"pod={sim.name}_{sim.namespace}({sim.uid})")
            delay, token = c.backoff, c.token
            self._event(sim, c, "Warning", "BackOff",
                        f"Back-off restarting failed container {c.name} in pod {sim.name}_{sim.namespace}({sim.uid})")
        self._publish(sim)
        self.manager.after(delay - FIRST_RESTART, lambda: self._restart(uid, name, token, True))

    def _restart(self, uid: str, name: str, token: int, doubled: bool) -> None:
        with self._lock:
            found = self._current(uid, name, token)
            if found is None:
                return
            sim, c = found
            if c.terminated is not None:
                c.last_terminated = c.terminated
            if doubled:
                c.backoff = min(c.backoff * 2, BACKOFF_MAX)
            c.restart_count += 1
            self._start(sim, c)
        self._publish(sim)

    def _restart_policy(self, sim: PodSim) -> str:
        pod = self.store.find("pods", sim.namespace, sim.name) or {}
        return pod.get("spec", {}).get("restartPolicy", "Always")

    # -- status ----------------------------------------------------------------------------------

    def _publish(self, sim: PodSim) -> None:
        with self._lock:
            containers = {k: copy.copy(v) for k, v in sim.containers.items()}
            view = copy.copy(sim)
            view.containers = containers
        now = self.clock.timestamp()

        def write(obj: Obj) -> None:
            policy = obj.get("spec", {}).get("restartPolicy", "Always")
            obj["status"] = pod_status(view, obj.get("status") or {}, now, self.clock.timestamp, policy)

        try:
            self.store.mutate("pods", sim.namespace, sim.name, write, status=True)
        except ApiError as err:
            if err.code != 404:
                raise

    def _event(self, sim: PodSim, c: ContainerSim, type_: str, reason: str, message: str) -> None:
        ref = {"kind": "Pod", "apiVersion": "v1",
               "metadata": {"name": sim.name, "namespace": sim.namespace, "uid": sim.uid}}
        self.events.record(ref, type_, reason, message, "kubelet", host=sim.node,
                           field_path=f"spec.containers{{{c.name}}}")
