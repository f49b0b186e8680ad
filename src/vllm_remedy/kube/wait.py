"""A rollout wait with ``kubectl rollout status`` semantics that fails fast on crash loops and unschedulable pods.

kubectl keeps waiting while the new pods crash-loop (kubectl#738) — for a CUDA OOM that is the whole
progress deadline of dead air. We stop as soon as a pod of the *new* ReplicaSet is in CrashLoopBackOff
or has restarted ``restart_limit`` times, or has stayed Unschedulable for ``unschedulable_grace``
seconds, and say why: the scheduler's message, or the crashed container's previous log, classified.
Success also needs every live pod of the new ReplicaSet Ready: a status that says "rolled out" while a
new pod is not Ready is stale, and believing it is how crash loops get blessed. Time comes from a
``Clock`` so the same loop runs in simulated seconds on the rehearsal cluster. A ``progress`` hook sees
every poll (the Deployment, the new pods, the clock's time): how ``kube.progress`` shows a long wait.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from vllm_remedy.kube.errors import KubeError, RolloutError
from vllm_remedy.kube.health import ContainerHealth, PodHealth, pod_health
from vllm_remedy.kube.history import find_new_replicaset, owned_replicasets, revision_of
from vllm_remedy.kube.selectors import selector_string

if TYPE_CHECKING:  # annotations only: the manifest checks (vllm-remedy check) read this module offline, and
    # the client brings the kubernetes package (~0.1 s of imports)
    from vllm_remedy.kube.client import KubeClient
    from vllm_remedy.kube.serving import ServingGate

TIMED_OUT = "ProgressDeadlineExceeded"
#: Called on every poll with (Deployment, pods of its new ReplicaSet, clock time); must not raise.
ProgressHook = Callable[[Mapping[str, Any], list[dict[str, Any]], float], None]


class Clock(Protocol):
    """``now()`` in seconds and ``sleep(seconds)``; ``vllm_remedy.sim.clock.Clock`` fits."""

    def now(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...


class WallClock:
    """The real clock, ``wait_for_rollout``'s default; the rehearsal cluster passes its simulated one instead."""

    def now(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


def rollout_status(deployment: Mapping[str, Any], revision: int = 0) -> tuple[str, bool]:
    """kubectl's ``DeploymentStatusViewer.Status``: (message, done); raises RolloutError like kubectl does."""
    name = deployment["metadata"]["name"]
    if revision > 0:
        current = revision_of(deployment)
        if current is None:
            raise RolloutError(f'cannot get the revision of deployment "{name}"')
        if current != revision:
            raise RolloutError(f"desired revision ({revision}) is different from the running revision ({current})")
    meta, spec, status = deployment["metadata"], deployment.get("spec") or {}, deployment.get("status") or {}
    if int(meta.get("generation") or 0) > int(status.get("observedGeneration") or 0):
        return "Waiting for deployment spec update to be observed...\n", False
    for cond in status.get("conditions") or []:
        if cond.get("type") == "Progressing" and cond.get("reason") == TIMED_OUT:
            raise RolloutError(f'deployment "{name}" exceeded its progress deadline')
    want = spec.get("replicas")
    updated = int(status.get("updatedReplicas") or 0)
    replicas = int(status.get("replicas") or 0)
    available = int(status.get("availableReplicas") or 0)
    if want is not None and updated < int(want):
        return (f'Waiting for deployment "{name}" rollout to finish: {updated} out of {want} new replicas '
                "have been updated...\n"), False
    if replicas > updated:
        return (f'Waiting for deployment "{name}" rollout to finish: {replicas - updated} old replicas are '
                "pending termination...\n"), False
    if available < updated:
        return (f'Waiting for deployment "{name}" rollout to finish: {available} of {updated} updated replicas '
                "are available...\n"), False
    return f'deployment "{name}" successfully rolled out\n', True


def new_pods(deployment: Mapping[str, Any], replicasets: Sequence[Mapping[str, Any]],
             pods: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Pods controlled by the Deployment's new ReplicaSet (the one whose template is the Deployment's)."""
    new = find_new_replicaset(deployment, owned_replicasets(deployment, replicasets))
    if new is None:
        return []
    uid = new["metadata"].get("uid")
    return [dict(p) for p in pods if any(r.get("controller") and r.get("uid") == uid
                                         for r in (p.get("metadata") or {}).get("ownerReferences") or [])]


@dataclass(frozen=True)
class Crash:
    """Why the new revision is failing, with the evidence an operator needs first."""

    pod: str
    kind: str  # "crash-loop" | "unschedulable"
    message: str
    container: str | None = None
    restarts: int = 0
    exit_code: int | None = None
    terminated_reason: str | None = None
    log: str | None = None
    failure: str | None = None  # vllm_remedy.vllm.outcomes.Failure value
    startup: Any = None  # StartupReport


def crashing_container(health: PodHealth, restart_limit: int) -> ContainerHealth | None:
    """The first container in CrashLoopBackOff, or dead with ``restarts >= restart_limit``."""
    for c in health.containers:
        if c.crash_looping or (c.failed and c.restarts >= restart_limit) or (
                c.terminated_now and c.failed and c.restarts + 1 >= restart_limit):
            return c
    return None


def classify_log(text: str | None, exit_code: int | None, reason: str | None) -> tuple[str | None, Any]:
    """(Failure value, StartupReport) for a container log, via the startup-log classifier (without a log,
    the pod status alone may still name the failure).

    The log parser and classifier (~15 ms of CPU to import) are imported here, on the first crash read: most
    importers of this module (``check``'s and ``drift``'s crash-loop check, the deploys' rollout waits) never
    read a log in a healthy run."""
    from vllm_remedy.vllm.startup_log.failure import classify, status_failure
    from vllm_remedy.vllm.startup_log.parse import parse_startup_log

    if text is None:
        from_status = status_failure(exit_code, reason)
        return (None if from_status is None else from_status.value), None
    report = parse_startup_log(text)
    return classify(report, exit_code=exit_code, reason=reason).value, report


@dataclass
class WaitResult:
    """How a rollout wait ended; ``ok`` only for rolled-out. ``crash`` carries the classified log and ``statuses``
    kubectl's status lines, so the operator sees why without a second command."""

    ok: bool
    outcome: str  # "rolled-out" | "crash-loop" | "unschedulable" | "progress-deadline" | "timeout"
    message: str
    elapsed: float
    crash: Crash | None = None
    statuses: list[str] = field(default_factory=list)


def crash_log(client: KubeClient, namespace: str, pod: str, c: ContainerHealth) -> tuple[str | None, str | None, Any]:
    """(log, failure, report) of the instance that died.

    A container dead right now has its log as "current"; after a restart it is "previous". The kubelet
    may restart it between our status read and our log read, so when the first choice does not classify
    (the new instance's log is still loading), the other one is read too.
    """
    # A container that died with a failure has a failing log; "none" from it is the restarted instance's log, still
    # loading, and as inconclusive as "unknown" (a game day read that half-written log and reported no failure).
    died_failing = c.exit_code not in (None, 0)
    inconclusive = {None, "unknown", "none"} if died_failing else {None, "unknown"}
    tried: list[tuple[str | None, str | None, Any]] = []
    for previous in (not c.terminated_now, c.terminated_now):
        try:
            log: str | None = client.pod_log(namespace, pod, c.name, previous=previous)
        except KubeError:
            log = None
        failure, report = classify_log(log, c.exit_code, c.terminated_reason)
        if failure not in inconclusive:
            return log, failure, report
        tried.append((log, failure, report))
    # neither read classifies: prefer one that does not claim "none" for a container that died failing
    return next((t for t in tried if not (died_failing and t[1] == "none")), tried[0])


def crash_report(client: KubeClient, namespace: str, health: PodHealth, c: ContainerHealth,
                 fetch_log: bool = True) -> Crash:
    """The crash-loop verdict for one container: what kubelet says, the last exit and the classified log."""
    log, failure, report = crash_log(client, namespace, health.name, c) if fetch_log else (
        None, *classify_log(None, c.exit_code, c.terminated_reason))
    # between back-offs a crash-looping container is running again and has no waiting reason
    why = c.waiting_reason or f"{c.restarts} restarts"
    message = (f"pod {health.name} container {c.name}: {why} (last exit {c.exit_code}, "
               f"{c.terminated_reason or 'no reason'})" + (f"; startup log: {failure}" if failure else ""))
    return Crash(pod=health.name, kind="crash-loop", message=message, container=c.name, restarts=c.restarts,
                 exit_code=c.exit_code, terminated_reason=c.terminated_reason, log=log, failure=failure,
                 startup=report)


def wait_for_rollout(client: KubeClient, namespace: str, name: str, *, timeout: float = 900.0,
                     clock: Clock | None = None, interval: float = 2.0, restart_limit: int = 3,
                     unschedulable_grace: float = 60.0, revision: int = 0, fetch_log: bool = True,
                     progress: ProgressHook | None = None, gate: ServingGate | None = None) -> WaitResult:
    """Poll until rolled out, failing fast; ``timeout``, ``interval`` and the grace are clock seconds. With a
    ``gate`` (``kube.serving``), a Ready vLLM pod without a probe must also show it serves, with no restart."""
    clock = clock or WallClock()
    start = clock.now()
    first_unschedulable: dict[str, float] = {}
    statuses: list[str] = []

    def done(ok: bool, outcome: str, message: str, crash: Crash | None = None) -> WaitResult:
        return WaitResult(ok, outcome, message, clock.now() - start, crash, statuses)

    while True:
        deployment = client.get_deployment(namespace, name)
        try:
            text, finished = rollout_status(deployment, revision)
        except RolloutError as exc:
            if "progress deadline" not in str(exc):
                raise
            return done(False, "progress-deadline", str(exc))
        if not statuses or statuses[-1] != text:
            statuses.append(text)
        selector = selector_string((deployment.get("spec") or {}).get("selector"))
        rss = client.list_replicasets(namespace, selector)
        pods = new_pods(deployment, rss, client.list_pods(namespace, selector))
        live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
        rolled = finished and all(pod_health(p).ready for p in live)
        held = gate.waiting(live) if rolled and gate is not None else []
        if rolled and not held:
            said = f"{text.strip()} ({gate.NOTE})" if gate is not None and gate.used else text.strip()
            return done(True, "rolled-out", said)
        now = clock.now()
        if progress is not None:
            progress(deployment, pods, now)
        for pod in pods:
            health = pod_health(pod)
            bad = crashing_container(health, restart_limit)
            if bad is not None:
                crash = crash_report(client, namespace, health, bad, fetch_log)
                return done(False, "crash-loop", crash.message, crash)
            if health.unschedulable:
                since = first_unschedulable.setdefault(health.name, now)
                if now - since >= unschedulable_grace:
                    message = f"pod {health.name}: Unschedulable: {health.unschedulable}"
                    return done(False, "unschedulable", message,
                                Crash(pod=health.name, kind="unschedulable", message=health.unschedulable))
            else:
                first_unschedulable.pop(health.name, None)
        early = restarted_early(client, namespace, gate, pods)
        if early is not None:
            return done(False, "crash-loop", early.message, early)
        if now - start >= timeout:
            why = f"{gate.NOTE}, none yet from pod(s) {', '.join(held)}" if gate is not None and held else text.strip()
            return done(False, "timeout", f'timed out waiting for deployment "{name}": {why}')
        clock.sleep(interval)


def restarted_early(client: KubeClient, namespace: str, gate: ServingGate | None,
                    pods: list[dict[str, Any]]) -> Crash | None:
    """An unprobed vLLM container that restarted before it showed it serves: the crash, with its classified log."""
    found = gate.restarted(pods) if gate is not None else None
    if found is None:
        return None
    crash = crash_report(client, namespace, *found)
    message = f"{crash.message}; it restarted before vLLM's serving line (no readiness probe)"
    return Crash(**{**crash.__dict__, "message": message})


#: Failed restarts of a restored pod that count as a crash loop (as ``wait_for_rollout`` counts them).
RESTART_LIMIT = 3


def crash_now(client: KubeClient, namespace: str, name: str, restart_limit: int = RESTART_LIMIT) -> Crash | None:
    """The first crash-looping container of the Deployment's new ReplicaSet, with its classified log; else a
    new pod the scheduler cannot place, with its reason (past the progress deadline no grace is due)."""
    return crash_among(client, namespace, rollout_pods(client, namespace, name)[1], restart_limit)


def rollout_pods(client: KubeClient, namespace: str, name: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(the Deployment, the pods of its new ReplicaSet), read now."""
    deployment = client.get_deployment(namespace, name)
    selector = selector_string((deployment.get("spec") or {}).get("selector"))
    return deployment, new_pods(deployment, client.list_replicasets(namespace, selector),
                                client.list_pods(namespace, selector))


def crash_among(client: KubeClient, namespace: str, pods: Sequence[Mapping[str, Any]],
                restart_limit: int = RESTART_LIMIT) -> Crash | None:
    """``crash_now`` over pods already read."""
    for pod in pods:
        health = pod_health(pod)
        bad = crashing_container(health, restart_limit)
        if bad is not None:
            return crash_report(client, namespace, health, bad)
    for pod in pods:
        health = pod_health(pod)
        if health.unschedulable:
            return Crash(pod=health.name, kind="unschedulable",
                         message=f"pod {health.name}: Unschedulable: {health.unschedulable}")
    return None


def wait_restored(client: KubeClient, namespace: str, name: str, timeout: float, clock: Clock,
                  interval: float = 2.0, progress: ProgressHook | None = None, settle: float = 0.0,
                  gate: ServingGate | None = None) -> WaitResult:
    """Rolled out and Ready within ``timeout`` clock seconds, or why not.

    ``wait_for_rollout`` gives up as soon as the Deployment says ProgressDeadlineExceeded. Right after a
    rollback that verdict is usually the crash-looping revision's (the controller keeps it until the
    restored ReplicaSet makes progress). Our bound is ``timeout``; while it lasts, a deadline only means
    "look at the new pods ourselves" — a crash loop there still fails fast, with the classified log, and so
    does a new pod the scheduler cannot place, with the scheduler's reason. With ``settle``, a rollout only counts
    once no new pod has restarted for that many clock seconds after it (:func:`settle_watch`).
    """
    start = clock.now()
    while True:
        remaining = timeout - (clock.now() - start)
        result = wait_for_rollout(client, namespace, name, timeout=max(remaining, 0.0), clock=clock,
                                  interval=interval, progress=progress, gate=gate)
        if result.outcome != "progress-deadline":
            break
        deployment, pods = rollout_pods(client, namespace, name)
        crash = crash_among(client, namespace, pods)
        if crash is not None:
            result = WaitResult(False, crash.kind, crash.message, 0.0, crash, result.statuses)
            break
        now = clock.now()
        if progress is not None:
            progress(deployment, pods, now)
        if now - start >= timeout:
            result = WaitResult(False, "timeout", f'timed out waiting for deployment "{name}": {result.message}',
                                0.0, None, result.statuses)
            break
        clock.sleep(interval)
    if result.ok and settle > 0:
        settled = settle_watch(client, namespace, name, settle, clock, interval)
        if settled is not None:
            result = WaitResult(False, "crash-loop", settled.message, 0.0, settled, result.statuses)
    result.elapsed = clock.now() - start
    return result


def settle_watch(client: KubeClient, namespace: str, name: str, seconds: float, clock: Clock,
                 interval: float = 2.0) -> Crash | None:
    """After a rollout, ``seconds`` of clock time in which no new pod may restart: a shed revision that dies again
    under the load that killed its predecessor is not "restored", however Ready it was for a moment. The crash,
    with its classified log, or None when every pod stayed up."""
    start = clock.now()
    _deployment, pods = rollout_pods(client, namespace, name)
    baseline = {(h.name, c.name): c.restarts for h in map(pod_health, pods) for c in h.containers}
    while clock.now() - start < seconds:
        clock.sleep(interval)
        _deployment, pods = rollout_pods(client, namespace, name)
        for pod in pods:
            health = pod_health(pod)
            for c in health.containers:
                if c.restarts > baseline.get((health.name, c.name), 0) or c.crash_looping:
                    crash = crash_report(client, namespace, health, c)
                    after = clock.now() - start
                    return Crash(**{**crash.__dict__, "message": f"{crash.message}; it restarted {after:.0f}s after "
                                                                 "the rollout completed"})
    return None
