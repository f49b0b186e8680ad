"""Watching the game: a thread polls the target workload (any kind in ``targets``), its pods, nodes and route,
and fills the Timeline.

Why polling and not watches: it works the same against a real cluster behind any proxy, and a sample
every ~0.1 s of wall time is finer than anything the picture can show (a minute of cluster time at 600x).
Crashed containers' previous logs are read once per restart and classified with the startup-log parser.
"""

from __future__ import annotations

import copy
import threading
import time
from typing import Any

from vllm_remedy.errors import UserError
from vllm_remedy.gameday.compliance import Finding, findings, node_product
from vllm_remedy.gameday.predict import step_of
from vllm_remedy.gameday.scenario import Scenario
from vllm_remedy.gameday.timeline import DETECTION, FIRST_CRASH, Classified, Sample, Timeline
from vllm_remedy.gameday.world import route_path
from vllm_remedy.kube.annotations import stamp_seconds
from vllm_remedy.kube.client import KubeClient
from vllm_remedy.kube.health import container_health, pod_health
from vllm_remedy.kube.history import HASH_LABEL
from vllm_remedy.kube.wait import crash_log
from vllm_remedy.policy import Policy
from vllm_remedy.remedies.diagnose import evidence_lines
from vllm_remedy.vllm.startup_log import classify, parse_startup_log

#: Polls a crash whose log classifies ``unknown`` is read again before it is recorded so: on a loaded node the
#: previous log can lag the container status.
UNKNOWN_RETRIES = 3

Obj = dict[str, Any]


def logged_kv(text: str) -> dict[str, Any]:
    """What vLLM's own log says it got: KV-cache tokens and GiB (None where that release's log does not say), the
    "actual" next to the memory model's prediction in the report."""
    report = parse_startup_log(text)
    gib = report.kv_cache_gib
    if gib is None:
        gib = (report.failure_detail or {}).get("available_gib")
    return {"kv_tokens": report.kv_cache_tokens, "kv_gib": gib}


def bare_template(template: Obj) -> Obj:
    """The pod template without the controller's ``pod-template-hash`` label, so one template reads as one across
    ReplicaSets and the deploys' diffs show only real changes."""
    out = copy.deepcopy(template)
    (out.get("metadata") or {}).get("labels", {}).pop(HASH_LABEL, None)
    return out


def in_crash_loop(pod: Obj, container: str | None = None) -> bool:
    """A watched container crashed and has not been Ready since (``kube.health``'s one definition, which
    also holds while the model reloads between back-offs, so a sampled series does not read 0 by luck)."""
    return any(container_health(cs).crash_looping
               for cs in (pod.get("status") or {}).get("containerStatuses") or []
               if not container or cs.get("name") == container)


def started_since(pod: Obj, t: float) -> bool:
    """Was ``pod`` created at cluster time ``t`` or later (a pod the fault or a remedy started)? The runner sets
    ``fault_at`` before it applies the fault, so a poll in between still sees the healthy pre-game pods — Ready,
    not yet deleted — and judging those against the fault's nodes made a row 'predicted unknown, happened ready'.
    creationTimestamp has whole seconds: the second ``t`` falls in counts. An undated pod counts."""
    created = stamp_seconds((pod.get("metadata") or {}).get("creationTimestamp"))
    return created is None or created >= int(t)


class Observer:
    """Polls until ``stop()``; every read error is kept, never raised into the game."""

    def __init__(self, client: KubeClient, scenario: Scenario, policy: Policy, timeline: Timeline,
                 interval: float = 0.1) -> None:
        self.client, self.scenario, self.policy, self.timeline = client, scenario, policy, timeline
        self.interval = interval
        self.fault_at: float | None = None  # cluster time; set by the runner when the fault lands
        self.latest: dict[str, Any] = {}
        self.findings: list[Finding] = []
        self.errors: list[str] = []
        self._restarts: dict[str, int] = {}  # pod uid → highest restartCount seen
        self._logged: set[tuple[str, str]] = set()
        self._tries: dict[tuple[str, str], int] = {}
        self.pods_seen: dict[str, Obj] = {}  # pod name → {spec, node, ready, step, actual} for predictions vs outcomes
        self.restoring = False  # the game is putting the pre-game state back: new pods are that step's
        self._nodes: dict[str, Obj] = {}
        self._nodes_read = 0.0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._wake = threading.Event()  # set by wait_polls(fresh=True): poll now, not at the next interval
        self._thread = threading.Thread(target=self._loop, name="gameday-observer", daemon=True)
        self.polled = threading.Condition()
        self.polls = 0
        self._wanted = 0  # polls asked for by wait_polls(fresh=True), run without the interval between them

    def start(self) -> None:
        """Poll once synchronously, then start the thread, so ``snapshot()`` has state as soon as this returns."""
        self.poll()
        self._thread.start()

    def stop(self) -> None:
        """Stop polling; waits at most 10 s for the thread (a daemon: a hung API read cannot hold the process)."""
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout=10)

    def set_interval(self, seconds: float) -> None:
        """Poll every ``seconds`` from now on (the runner's fast-forward keeps the polls per cluster minute)."""
        self.interval = seconds
        self._wake.set()  # the loop's wait began at the old interval

    def wait_polls(self, count: int = 2, timeout: float = 5.0, *, fresh: bool = False) -> None:
        """Block until ``count`` more polls completed. ``fresh`` (the state after an action): those polls run back to
        back, starting now, instead of an interval apart; the cadence of the samples is otherwise unchanged."""
        with self.polled:
            target = self.polls + count
            if fresh:
                self._wanted = max(self._wanted, target)
                self._wake.set()
            self.polled.wait_for(lambda: self.polls >= target, timeout)

    def _loop(self) -> None:
        while True:
            with self.polled:
                behind = self.polls < self._wanted
            if not behind:
                self._wake.wait(self.interval)
            self._wake.clear()
            if self._stop.is_set():
                return
            try:
                self.poll()
            except Exception as exc:  # keep watching; a flaky API is part of a game day
                self.errors.append(str(exc))
                self._stop.wait(self.interval)  # a failed poll counts for nothing: retry at the cadence, not at once

    def poll(self) -> None:
        """One sample: the target, its pods, nodes (at most once a wall second) and the fallback route's weight. Once
        the fault has landed it also classifies new crashes and marks detection. Read errors raise; the loop keeps
        them."""
        sc = self.scenario
        now = self.client.server_time()
        wall = time.monotonic()
        target = sc.target
        dep = self.client.request("GET", target.path)
        pods = self.client.list_pods(sc.namespace, target.selector(dep))
        derived = target.pod_deployment
        view = target.view(dep, self.client.get_deployment(sc.namespace, derived) if derived else None)
        if wall - self._nodes_read > 1.0:
            self._nodes = {n["metadata"]["name"]: n for n in self.client.list_nodes()}
            self._nodes_read = wall
        weight = self._fallback_weight() if self.policy.fallback is not None else None
        found = findings(view, pods, self._nodes, self.policy, now, sc.container)
        with self._lock:
            template = self.timeline.template_index(bare_template(target.template(dep)))
            crash_looping = 0
            for pod in pods:
                health = pod_health(pod)
                uid = pod["metadata"].get("uid", pod["metadata"]["name"])
                self._restarts[uid] = max(self._restarts.get(uid, 0), health.restarts)
                crash_looping += int(in_crash_loop(pod, sc.container))
                if self.fault_at is not None and pod["spec"].get("nodeName") and started_since(pod, self.fault_at):
                    seen = self.pods_seen.setdefault(pod["metadata"]["name"], {
                        "spec": pod["spec"], "node": pod["spec"]["nodeName"], "ready": False, "t": now,
                        "step": "pre-game restore" if self.restoring else step_of(now, self.timeline.marks)})
                    seen["ready"] = seen["ready"] or health.ready
                    if health.ready and "actual" not in seen:
                        seen["actual"] = self._serving_log(pod)
                if self.fault_at is not None:
                    self._classify(pod, now, wall, template)
            desired, ready = target.counts(view)
            done = target.done(dep)
            self.timeline.samples.append(Sample(
                t=now, wall=wall, desired=desired, ready=ready, restarts=sum(self._restarts.values()),
                crash_looping=crash_looping, template=template, rolled_out=done, fallback_weight=weight))
            self.latest = {"deployment": dep, "view": view, "rolled_out": done, "pods": pods, "nodes": self._nodes,
                           "t": now, "wall": wall}
            self.findings = found
            if self.fault_at is not None and self.scenario.detection.kind == "policy":
                self._policy_detection(found, now, wall)
        with self.polled:
            self.polls += 1
            self.polled.notify_all()

    def _fallback_weight(self) -> int | None:
        fb = self.policy.fallback
        assert fb is not None
        try:
            route = self.client.request("GET", route_path(fb.route.namespace, fb.route.name))
        except UserError:
            return None
        total = mine = 0
        for rule in (route.get("spec") or {}).get("rules") or []:
            for ref in rule.get("backendRefs") or []:
                weight = int(ref.get("weight", 1))
                total += weight
                if ref.get("name") == fb.fallback.name:
                    mine += weight
        return round(100 * mine / total) if total else None

    def _classify(self, pod: Obj, now: float, wall: float, template: int) -> None:
        """Read and classify the previous log of each container restart not seen yet."""
        name = pod["metadata"]["name"]
        for cs in (pod.get("status") or {}).get("containerStatuses") or []:
            if (sc_name := self.scenario.container) and cs.get("name") != sc_name:
                continue
            restarts = int(cs.get("restartCount", 0))
            now_dead = (cs.get("state") or {}).get("terminated")
            terminated = now_dead or (cs.get("lastState") or {}).get("terminated")
            if not terminated:
                continue
            death = (name, str(terminated.get("containerID") or terminated.get("finishedAt")))
            if death in self._logged:
                continue
            self._logged.add(death)
            if self.timeline.first(FIRST_CRASH) is None:
                self.timeline.mark(now, wall, FIRST_CRASH, f"first crash: pod {name} "
                                   f"(exit {terminated.get('exitCode')}, {terminated.get('reason', '')})")
            # the kubelet may restart it between this poll and the log read: crash_log then reads the other log
            log, found, _ = crash_log(self.client, self.scenario.namespace, name, container_health(cs))
            text = log or ""
            failure = found or classify(parse_startup_log(text), exit_code=terminated.get("exitCode"),
                                        reason=terminated.get("reason")).value
            tries = self._tries[death] = self._tries.get(death, 0) + 1
            if failure == "unknown" and tries < UNKNOWN_RETRIES:
                self._logged.discard(death)  # the log may not be readable yet (a loaded node): look again next poll
                continue
            seen = self.pods_seen.get(name)
            if seen is not None and not (seen.get("actual") or {}).get("kv_tokens"):
                seen["actual"] = logged_kv(text)
            node = (pod.get("spec") or {}).get("nodeName") or ""
            product = node_product(self._nodes.get(node) or {}) or "?"
            self.timeline.classified.append(Classified(
                t=now, pod=name, node=f"{node} ({product})", restart=restarts, failure=failure,
                exit_code=terminated.get("exitCode"), template=template,
                evidence=tuple(evidence_lines(text, tail=8) or text.splitlines()[-8:])))
            det = self.scenario.detection
            if det.kind == "classification" and failure == det.value and self.timeline.first(DETECTION) is None:
                self.timeline.mark(now, wall, DETECTION, f"detected: {failure} in pod {name}'s log")

    def _serving_log(self, pod: Obj) -> dict[str, Any]:
        """The KV cache a serving pod's log reports (its startup lines), read once when it first shows Ready."""
        try:
            text = self.client.pod_log(self.scenario.namespace, pod["metadata"]["name"], self.scenario.container)
        except UserError:
            return {}
        return logged_kv(text)

    def _policy_detection(self, found: list[Finding], now: float, wall: float) -> None:
        want = self.scenario.detection.value
        hit = next((f for f in found if f.key == want or f.key.startswith(want + ":")), None)
        if hit is not None and self.timeline.first(DETECTION) is None:
            self.timeline.mark(now, wall, DETECTION, f"detected: {hit}")

    def snapshot(self) -> tuple[dict[str, Any], list[Finding]]:
        """The latest read and its findings, copied under the lock so the runner's waits see one consistent poll."""
        with self._lock:
            return dict(self.latest), list(self.findings)
