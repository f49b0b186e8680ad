"""What a game day recorded: samples of the Deployment over time and the marks an SRE cares about.

Pure data and arithmetic: the observer fills it, the report and the verdict read it. Times are kept
twice — the cluster's clock (simulated seconds on the rehearsal cluster, i.e. what the incident would
take for real) and the wall clock (what the rehearsal itself took).
"""

from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass, field
from typing import Any

FAULT, FIRST_CRASH, DETECTION, ACTION, ACTION_END = "fault", "first-crash", "detection", "action", "action-end"
ROLLOUT_DONE, CONFIRM, RESTORE = "rollout-done", "confirm", "pre-game-restore"


@dataclass(frozen=True)
class Sample:
    """One poll of the Deployment and its pods."""

    t: float  # cluster time
    wall: float
    desired: int
    ready: int
    restarts: int  # cumulative over every pod seen since the game started
    crash_looping: int
    template: int  # index of the pod template in Timeline.templates
    rolled_out: bool = False  # every replica updated, available and Ready
    fallback_weight: int | None = None  # percent of the watched route's traffic on the fallback backend


@dataclass(frozen=True)
class Mark:
    """A moment for the incident timeline (fault, first crash, detection, actions, rollout done, confirm, restore);
    ``ok`` False marks an action or restore that failed."""

    t: float
    wall: float
    kind: str
    label: str
    ok: bool = True


@dataclass(frozen=True)
class Classified:
    """One crashed container's previous log, classified (the report shows its evidence lines)."""

    t: float
    pod: str
    node: str
    restart: int
    failure: str
    exit_code: int | None
    template: int
    evidence: tuple[str, ...]


@dataclass
class Timeline:
    """The game's record — samples, marks, classified crashes, distinct pod templates — and the figures computed
    from it, so the report, the JSON and the verdict agree."""

    samples: list[Sample] = field(default_factory=list)
    marks: list[Mark] = field(default_factory=list)
    classified: list[Classified] = field(default_factory=list)
    templates: list[dict[str, Any]] = field(default_factory=list)  # distinct pod templates, in order seen
    speed: float | None = None  # simulated seconds per wall second (None on a real cluster)
    faulted: int | None = None  # the template the fault left running, read right after it was applied

    def mark(self, t: float, wall: float, kind: str, label: str, ok: bool = True) -> Mark:
        made = Mark(t, wall, kind, label, ok)
        self.marks.append(made)
        return made

    def first(self, kind: str) -> Mark | None:
        """The first recorded mark of ``kind``, None if it never happened (figures count from the first one)."""
        return next((m for m in self.marks if m.kind == kind), None)

    def template_index(self, template: dict[str, Any]) -> int:
        """Index of ``template`` among the distinct templates seen, adding it if new; samples store the index, so
        counting template changes is comparing integers."""
        for i, known in enumerate(self.templates):
            if known == template:
                return i
        self.templates.append(template)
        return len(self.templates) - 1

    # -- figures ----------------------------------------------------------------------------------

    def time_to_restore(self) -> tuple[float, float] | None:
        """(cluster seconds, wall seconds) from the fault to the restored rollout; None if never restored."""
        fault, done = self.first(FAULT), self.first(ROLLOUT_DONE)
        if fault is None or done is None:
            return None
        return done.t - fault.t, done.wall - fault.wall

    def tool_seconds(self) -> tuple[float, float]:
        """(cluster, wall) seconds the playbooks spent on their own before recovery: start-up, reads, decisions.

        Each deploy counts from its start (the first from the detection that set it off) until its first
        write is seen (a new pod template), or until it exited if it wrote nothing. On the rehearsal cluster
        that stretch is wall time multiplied by the speed - 1.3 s of Python start-up reads as 13 minutes at
        600x - though it would take the same 1.3 s on a real cluster. Waiting for the rollout after the
        write is the cluster's own time and not counted.
        """
        done, detected = self.first(ROLLOUT_DONE), self.first(DETECTION)
        cluster = wall = 0.0
        ends = [m for m in self.marks if m.kind == ACTION_END]
        for i, start in enumerate(m for m in self.marks if m.kind == ACTION):
            if done is not None and start.t >= done.t:
                continue
            if i == 0 and detected is not None and detected.t <= start.t:
                start = detected  # the runner's reaction to the detection is wall time too
            base = [s.template for s in self.samples if s.t <= start.t][-1:]
            if self.faulted is not None and (not base or start.t <= (self.first(DETECTION) or start).t):
                base = [self.faulted]
            wrote = next((s for s in self.samples if s.t > start.t and base and s.template != base[0]), None)
            end = next((m for m in ends if m.t >= start.t), None)
            stop = min((x for x in (wrote, end, done) if x is not None), key=lambda x: x.t, default=None)
            if stop is not None:
                cluster += stop.t - start.t
                wall += stop.wall - start.wall
        return cluster, wall

    def projected_restore(self) -> float | None:
        """Time to restore as it would run on a real cluster: the cluster's dynamics (model loads, back-off,
        detection) in cluster time, the playbooks' own work at its wall duration. None if never restored."""
        ttr = self.time_to_restore()
        if ttr is None:
            return None
        cluster, wall = self.tool_seconds()
        return max(0.0, ttr[0] - cluster + wall)

    def restarts_to_recovery(self) -> int:
        """Container restarts between the fault and recovery (or the end, if never recovered)."""
        fault, done = self.first(FAULT), self.first(ROLLOUT_DONE)
        if fault is None:
            return 0
        within = [s for s in self.samples if s.t >= fault.t and (done is None or s.t <= done.t)]
        if not within:
            return 0
        base = max((s.restarts for s in self.samples if s.t < fault.t), default=within[0].restarts)
        return within[-1].restarts - base

    def template_changes(self) -> int:
        """Pod-template changes remediation made: transitions from the first action up to recovery."""
        start, done = self.first(ACTION), self.first(ROLLOUT_DONE)
        if start is None:
            return 0
        # counted from the template the fault left, so the fault's own change is never counted
        before = [self.faulted] if self.faulted is not None else [s.template for s in self.samples
                                                                  if s.t < start.t][-1:]
        seen = before + [s.template for s in self.samples if s.t >= start.t and (done is None or s.t <= done.t)]
        return sum(1 for a, b in itertools.pairwise(seen) if a != b)

    def restored_since(self, after: float, faulted: int | None) -> Sample | None:
        """First sample of the current run of healthy samples on a template other than ``faulted``.

        Recovery is when the pods became Ready, not when the tool that caused it exited.
        """
        start = None
        for s in self.samples:
            if s.t < after:
                continue
            good = s.rolled_out and not s.crash_looping and s.template != faulted
            start = (start or s) if good else None
        return start

    def faulted_template(self) -> int | None:
        """The template running once the fault landed (read after it was applied, else at detection)."""
        if self.faulted is not None:
            return self.faulted
        anchor = self.first(DETECTION)
        chosen = [s for s in self.samples if anchor is None or s.t <= anchor.t]
        return chosen[-1].template if chosen else None

    def to_json(self) -> dict[str, Any]:
        """The figures plus the raw record, as the ``timeline`` key of the game's ``-o json`` document."""
        ttr = self.time_to_restore()
        return {
            "speed": self.speed,
            "time_to_restore": None if ttr is None else {
                "projected_seconds": round(self.projected_restore() or 0.0, 1), "cluster_seconds": round(ttr[0], 1),
                "wall_seconds": round(ttr[1], 2), "tool_wall_seconds": round(self.tool_seconds()[1], 2)},
            "restarts_to_recovery": self.restarts_to_recovery(),
            "template_changes_to_recovery": self.template_changes(),
            "marks": [asdict(m) for m in self.marks],
            "samples": [asdict(s) for s in self.samples],
            "classified": [asdict(c) for c in self.classified],
        }
