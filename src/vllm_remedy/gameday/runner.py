"""One game day: set up the world, inject the fault, let the deploys restore service, judge, put back.

The order is an incident's: fault → first crash → detection → each remediation (a real pyinfra run) →
rollout done → stable/confirmed. Waits are measured on the cluster's clock (compressed on the rehearsal
cluster), with a wall-clock cap. Whatever happens — a failed step, an exception, SIGINT or SIGTERM — the
``finally`` puts the pre-game state back (with SIGINT ignored while it does) and says whether it could.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vllm_remedy.errors import UserError
from vllm_remedy.gameday import play
from vllm_remedy.gameday.local import LocalCluster, start_local
from vllm_remedy.gameday.observe import Observer, bare_template
from vllm_remedy.gameday.scenario import Scenario
from vllm_remedy.gameday.timeline import ACTION, ACTION_END, CONFIRM, DETECTION, FAULT, RESTORE, ROLLOUT_DONE, Timeline
from vllm_remedy.gameday.verdict import Check, judge
from vllm_remedy.gameday.world import RestoreError, Restorer
from vllm_remedy.kube.annotations import Keys
from vllm_remedy.kube.client import KubeClient
from vllm_remedy.policy import Policy, load_policy
from vllm_remedy.sim.vllm_pod.reality import Reality

DETECT_WITHIN = 1800.0  # cluster seconds from the fault to detection
STABLE_FOR = 600.0  # cluster seconds a restored Deployment must stay Ready without restarts (runner's confirm)
HEALTHY_WITHIN = 1800.0  # cluster seconds for the world's rollouts and the pre-game restore
#: How fast the rehearsal cluster runs while the game only lets cluster time pass (the healthy baseline, the stable
#: window): nothing of ours runs then, and the observer polls as often per cluster minute as at the game's speed.
FAST_FORWARD = 1000.0


@dataclass
class GameResult:
    """Everything one game produced: the verdict's inputs, the report's material and what was put back."""

    scenario: Scenario
    cluster: str
    timeline: Timeline
    policy: Policy
    runs: list[play.DeployRun] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    restored: list[str] = field(default_factory=list)
    interrupted: bool = False
    error: str | None = None
    final: dict[str, Any] = field(default_factory=dict)
    pods_seen: dict[str, Any] = field(default_factory=dict)
    wall_seconds: float = 0.0

    @property
    def passed(self) -> bool:
        """Every check passed and there was at least one; an interrupted or errored game never passes."""
        return not self.interrupted and self.error is None and bool(self.checks) and all(c.ok for c in self.checks)

    def verdict(self) -> str:
        """One line: PASS, or FAIL with the first reason."""
        if self.interrupted:
            return "INTERRUPTED: the game was stopped; pre-game state " + (
                "restored" if self._restore_ok() else "NOT fully restored")
        if self.error:
            return f"FAIL: {self.error}"
        failed = [c for c in self.checks if not c.ok]
        if failed:
            return f"FAIL: {failed[0].name}: {failed[0].detail}"
        return "PASS"

    def _restore_ok(self) -> bool:
        return any(c.name == "pre-game state restored" and c.ok for c in self.checks)


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM ends the game like Ctrl-C does (KeyboardInterrupt), so the ``finally`` restores either way."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def raise_interrupt(_sig: int, _frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, raise_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def uninterruptible() -> Iterator[None]:
    """While the pre-game state is put back, a second Ctrl-C must not leave the cluster half-restored."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old_int = signal.signal(signal.SIGINT, signal.SIG_IGN)
    old_term = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old_int)
        signal.signal(signal.SIGTERM, old_term)


class Game:
    """Holds the moving parts of one run; ``run()`` returns the GameResult."""

    def __init__(self, scenario: Scenario, *, cluster: str = "local", kubeconfig: Path | None = None,
                 speed: float = 600.0, workdir: Path, interval: float = 0.1,
                 progress: Callable[[str], None] | None = None, reality: Reality | None = None) -> None:
        self.scenario, self.cluster_name, self.kubeconfig = scenario, cluster, kubeconfig
        self.reality = reality or scenario.reality  # --reality over the scenario's world.reality
        self.speed, self.workdir, self.interval = speed, workdir, interval
        self.progress = progress or (lambda _line: None)
        self.policy = load_policy(scenario.policy)
        self.timeline = Timeline(speed=speed if cluster == "local" else None)
        self.result = GameResult(scenario, cluster, self.timeline, self.policy)
        self.local: LocalCluster | None = None
        self.observer: Observer | None = None
        self.restorer: Restorer | None = None
        self.context = cluster

    # -- waiting on the cluster's clock ------------------------------------------------------------

    def _wall_cap(self, cluster_seconds: float) -> float:
        if self.local is not None:
            return cluster_seconds / self.speed * 3 + 30
        return cluster_seconds + 60

    def wait(self, predicate: Callable[[dict[str, Any]], bool], cluster_seconds: float) -> bool:
        """Poll until ``predicate(latest)`` holds; False after ``cluster_seconds`` on the cluster's clock, or at the
        wall-clock cap that keeps a stalled cluster from hanging the game."""
        obs = self._obs()
        start_t = obs.snapshot()[0].get("t") or 0.0
        start_wall = time.monotonic()
        while True:
            obs.wait_polls(1)
            latest, _ = obs.snapshot()
            if latest and predicate(latest):
                return True
            if latest.get("t", 0.0) - start_t > cluster_seconds:
                return False
            if time.monotonic() - start_wall > self._wall_cap(cluster_seconds):
                return False

    @contextlib.contextmanager
    def fast_forward(self) -> Iterator[None]:
        """Run the rehearsal cluster at :data:`FAST_FORWARD` inside the block, then at the game's speed again: for
        waits where no deploy runs (a real-time guard would lose its meaning) and only cluster time must pass. The
        observer's interval shrinks by the same factor, so it samples the cluster as often per cluster minute and
        the picture and every check read the same series. A real cluster, or a faster game, is left as it is."""
        if self.local is None or self.speed >= FAST_FORWARD:
            yield
            return
        clock, obs = self.local.cluster.clock, self._obs()
        interval = obs.interval
        clock.set_speed(FAST_FORWARD)
        obs.set_interval(interval * self.speed / FAST_FORWARD)
        try:
            yield
        finally:
            clock.set_speed(self.speed)
            obs.set_interval(interval)

    def _obs(self) -> Observer:
        assert self.observer is not None
        return self.observer

    def _now(self) -> tuple[float, float]:
        latest, _ = self._obs().snapshot()
        return latest.get("t", 0.0), latest.get("wall", time.monotonic())

    # -- the game --------------------------------------------------------------------------------

    def run(self) -> GameResult:
        """Connect, play, and always put the pre-game state back; Ctrl-C/SIGTERM and UserErrors become the result's
        verdict, anything else propagates after the restore."""
        started = time.monotonic()
        try:
            with sigterm_as_interrupt():
                try:
                    self._connect()
                    self._play()
                except KeyboardInterrupt:
                    self.result.interrupted = True
                    self.progress("interrupted: restoring the pre-game state")
                except UserError as exc:
                    self.result.error = str(exc)
                finally:
                    with uninterruptible():
                        self._finish()
        finally:
            self.result.wall_seconds = time.monotonic() - started
        return self.result

    def _connect(self) -> None:
        sc = self.scenario
        if self.cluster_name == "local":
            self.progress(f"starting the rehearsal cluster (seed {sc.seed}, {self.speed:g}x)")
            self.local = start_local(self.workdir, sc.seed, self.speed, self.reality)
            self.kubeconfig, self.context = self.local.kubeconfig, self.local.context
        elif sc.sim_only:
            raise UserError(f"{sc.source}: sim-only: this fault exists only on the rehearsal cluster; "
                            "run it with --cluster local")
        client = KubeClient.for_context(self.context, str(self.kubeconfig) if self.kubeconfig else None)
        self.client = client
        self.restorer = Restorer(client, sc, Keys(self.policy.annotation_prefix))
        self.restorer.capture()
        self.observer = Observer(client, sc, self.policy, self.timeline, self.interval)
        self.observer.start()

    def _play(self) -> None:
        sc, restorer, obs = self.scenario, self.restorer, self._obs()
        assert restorer is not None
        if not self.wait(lambda s: s["rolled_out"], HEALTHY_WITHIN):
            raise UserError(f"{sc.target.label()} is not rolled out and Ready before the game; "
                            "a game day starts from a healthy service")
        now, _ = self._now()
        if sc.objects:
            restorer.create_objects(now)
        for step in sc.world:
            self.progress(f"world: {step.what}")
            restorer.apply(step, self._now()[0])
            if step.wait:
                obs.wait_polls(3, fresh=True)
                if not self.wait(lambda s: s["rolled_out"], HEALTHY_WITHIN):
                    raise UserError(f"{sc.source}: world step {step.what!r} did not roll out")
        if sc.known_good_current:
            restorer.mark_known_good(self._now()[0])
        with self.fast_forward():
            self.wait(lambda s: False, 120.0)  # two minutes of healthy baseline in the picture
        t, wall = self._now()
        self.timeline.mark(t, wall, FAULT, "fault: " + "; ".join(s.what for s in sc.fault))
        obs.fault_at = t
        for step in sc.fault:
            self.progress(f"fault: {step.what}")
            restorer.apply(step, self._now()[0])
        obs.wait_polls(2, fresh=True)  # one whole poll after the fault: the template it left running
        if self.timeline.samples:
            self.timeline.faulted = self.timeline.samples[-1].template
        self.progress("waiting for detection")
        self.wait(lambda s: self.timeline.first(DETECTION) is not None, DETECT_WITHIN)
        faulted = self.timeline.faulted_template()
        for deploy in sc.deploys:
            self._deploy(deploy)
        self.progress("waiting for the restored rollout")
        fault = self.timeline.first(FAULT)
        assert fault is not None
        budget = max(60.0, sc.success.within - (self._now()[0] - fault.t))
        first_action = self.timeline.first(ACTION)
        after = first_action.t if first_action else fault.t
        if self.wait(lambda s: self.timeline.restored_since(after, faulted) is not None, budget):
            since = self.timeline.restored_since(after, faulted)
            assert since is not None
            self.timeline.mark(since.t, since.wall, ROLLOUT_DONE, "rollout done: every replica Ready on a new template")
            restarts = self.timeline.samples[-1].restarts
            with self.fast_forward():
                stable = self.wait(lambda s: self.timeline.samples[-1].restarts != restarts
                                   or not s["rolled_out"], STABLE_FOR)
            if not stable and self.timeline.first(CONFIRM) is None:
                t, wall = self._now()
                self.timeline.mark(t, wall, CONFIRM, f"stable for {STABLE_FOR / 60:g}m (runner check)")
        obs.wait_polls(2, fresh=True)
        latest, found = obs.snapshot()
        self.result.final = {"deployment": latest.get("deployment"), "pods": latest.get("pods"),
                             "nodes": latest.get("nodes"), "findings": [str(f) for f in found]}
        self.result.checks = judge(sc, self.timeline, self.result.runs, latest, found)

    def _deploy(self, deploy: Path) -> None:
        sc, obs = self.scenario, self._obs()
        host = sc.target.host(self.context)
        inventory = play.write_inventory(self.workdir / "inventory.py", host, sc.policy, self.kubeconfig)
        label = _short(deploy)
        before, _ = obs.snapshot()
        t0, wall0 = self._now()
        self.timeline.mark(t0, wall0, ACTION, f"run {label}")
        self.progress(f"pyinfra -y {inventory.name} {label}")
        code, text = play.run_pyinfra(inventory, deploy, self.kubeconfig, self.workdir,
                                      extra_env=self.local.tools_env if self.local is not None else None)
        obs.wait_polls(2, fresh=True)
        after, _ = obs.snapshot()
        t1, wall1 = self._now()
        run = play.DeployRun(label, code, wall1 - wall0, t1 - t0, play.host_lines(text, host))
        old = bare_template(sc.target.template(before["deployment"]))
        new = bare_template(sc.target.template(after["deployment"]))
        run.diff = play.template_diff(old, new, f"{sc.deployment} pod template")
        self.result.runs.append(run)
        self.timeline.mark(t1, wall1, ACTION_END, f"{label} exited {code}", ok=code == 0)
        if "confirm" in deploy.stem and code == 0:
            self.timeline.mark(t1, wall1, CONFIRM, f"{label} passed")

    def _finish(self) -> None:
        """Put the pre-game state back, verify it, stop the local cluster."""
        obs, restorer = self.observer, self.restorer
        try:
            if restorer is not None and restorer.deployment:
                self.progress("restoring the pre-game state")
                if obs is not None:
                    obs.restoring = True
                ok, detail = True, ""
                try:
                    self.result.restored = restorer.restore()
                except RestoreError as exc:
                    ok, detail = False, str(exc)
                    self.result.restored = exc.done
                if obs is not None and ok:
                    back = self.wait(lambda s: s["rolled_out"] and restorer.template_restored(),
                                     HEALTHY_WITHIN)
                    ok = back and restorer.template_restored()
                    detail = "" if ok else "the pre-game template did not roll out again"
                if obs is not None:
                    t, wall = self._now()
                    self.timeline.mark(t, wall, RESTORE, "pre-game state restored" if ok else "restore FAILED", ok)
                self.result.checks.append(Check("pre-game state restored", ok, detail or
                                                f"{len(self.result.restored)} object(s) put back and verified"))
        except Exception as exc:  # a broken cluster must still end the game with a verdict
            self.result.checks.append(Check("pre-game state restored", False, str(exc)))
        finally:
            if obs is not None:
                obs.stop()
                self.result.pods_seen = dict(obs.pods_seen)
            if self.local is not None:
                self.local.stop()


def _short(path: Path) -> str:
    parts = path.parts
    return "/".join(parts[-2:]) if len(parts) >= 2 else str(path)
