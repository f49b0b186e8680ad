"""The postmortem picture: Ready replicas and crash-looping pods over the incident, actions marked.

Minutes on the x axis are cluster minutes from the fault (what the incident would take for real). Red
band: the outage (fewer Ready replicas than desired). Blue band: a pyinfra process running, from its
start to its exit — not the deploy's own work, which ends earlier (the rollout it waited for is the
"restored" line). Vertical lines are the timeline's marks, labelled above the plot so no label covers
data; the legend sits under the figure for the same reason. Agg backend: no display needed.
"""

from __future__ import annotations

import io
import itertools
from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from vllm_remedy.gameday.timeline import (
    ACTION,
    ACTION_END,
    CONFIRM,
    DETECTION,
    FAULT,
    FIRST_CRASH,
    RESTORE,
    ROLLOUT_DONE,
    Sample,
    Timeline,
)

_STYLE = {  # mark kind → (colour, short label)
    FAULT: ("#c0392b", "fault"), FIRST_CRASH: ("#e67e22", "first crash"), DETECTION: ("#8e44ad", "detected"),
    ACTION: ("#2471a3", "run"), ROLLOUT_DONE: ("#1e8449", "restored"), CONFIRM: ("#117a65", "confirmed"),
    RESTORE: ("#7f8c8d", "pre-game restore"),
}
#: Width of one label character as a fraction of the x range (8 pt text on a ~9.5 in wide plot).
CHAR_WIDTH = 0.0066
#: Labels starting further right than this fraction of the x range are right-aligned on their line.
RIGHT_ALIGN_FROM = 0.8


@dataclass(frozen=True)
class Placed:
    """Where a mark's label goes: its line's x, the row above the plot, and which side of the line."""

    x: float
    row: int
    align: str  # "left" (text starts at the line) or "right" (text ends at the line)


def place_labels(marks: list[tuple[float, str]], lo: float, hi: float) -> list[Placed]:
    """Rows and sides for labels at ``(x, text)`` so none overlaps another or leaves ``[lo, hi]``.

    A label near the right end is drawn leftwards of its line (else it runs off the axis, or over the
    fallback axis' ticks); each takes the lowest row where its extent overlaps nothing already placed.
    """
    span = max(hi - lo, 1e-9)
    taken: dict[int, list[tuple[float, float]]] = {}
    out = []
    for x, text in marks:
        width = (len(text) + 2) * CHAR_WIDTH * span  # one character of gap each side
        align = "right" if (x - lo) / span > RIGHT_ALIGN_FROM else "left"
        extent = (x - width, x) if align == "right" else (x, x + width)
        row = 0
        while any(a < extent[1] and extent[0] < b for a, b in taken.get(row, [])):
            row += 1
        taken.setdefault(row, []).append(extent)
        out.append(Placed(x, row, align))
    return out


def _label(kind: str, text: str) -> str:
    if kind == ACTION:
        return text.replace("run ", "")
    return _STYLE[kind][1]


def _outages(xs: list[float], ready: list[int], desired: list[int]) -> list[tuple[float, float]]:
    """Spans where fewer replicas were Ready than desired (step semantics: a sample holds until the next)."""
    spans, start = [], None
    for i, x in enumerate(xs):
        down = ready[i] < desired[i]
        if down and start is None:
            start = x
        elif not down and start is not None:
            spans.append((start, x))
            start = None
    if start is not None:
        spans.append((start, xs[-1]))
    return spans


def template_changes(samples: list[Sample]) -> list[int]:
    """Indexes of the samples where the Deployment's pod template differs from the sample before."""
    return [i for i in range(1, len(samples)) if samples[i].template != samples[i - 1].template]


def outage_seconds(samples: list[Sample]) -> float:
    """Cluster seconds with fewer Ready replicas than desired (a sample holds until the next one)."""
    return sum(b.t - a.t for a, b in itertools.pairwise(samples) if a.ready < a.desired)


def subtitle(timeline: Timeline) -> str:
    """Two lines: the figures an SRE quotes first (restore, outage, detection), then restarts and pace."""
    ttr, fault, detected = timeline.time_to_restore(), timeline.first(FAULT), timeline.first(DETECTION)
    projected = timeline.projected_restore()
    if ttr is None or projected is None:
        first = ["NOT restored"]
    elif timeline.speed:
        first = [f"time to restore {projected / 60:.1f} min projected ({ttr[0] / 60:.1f} min cluster time)"]
    else:
        first = [f"time to restore {ttr[0] / 60:.1f} min"]
    down = outage_seconds(timeline.samples)
    first.append(f"outage {down / 60:.1f} min" if down else "no outage")
    if fault is not None and detected is not None:
        first.append(f"detected after {(detected.t - fault.t) / 60:.1f} min")
    second = [f"{timeline.restarts_to_recovery()} container restarts"]
    if ttr:
        second.append("restored = fixed template rolled out, every replica Ready")
    if timeline.speed:
        second.append(f"cluster time, rehearsed at {timeline.speed:g}x" + (f" ({ttr[1]:.1f} s wall)" if ttr else ""))
    return " · ".join(first) + "\n" + " · ".join(second)


def render_png(timeline: Timeline, title: str) -> bytes:
    """The picture as PNG bytes (empty timeline → a figure that says so)."""
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(11, 6.4), sharex=True, height_ratios=[3, 2],
                                  layout="constrained")
    fault = timeline.first(FAULT)
    samples = timeline.samples
    origin = fault.t if fault else (samples[0].t if samples else 0.0)
    xs = [(s.t - origin) / 60 for s in samples]
    handles: list[Line2D | Patch] = []
    if samples:
        desired, ready = [s.desired for s in samples], [s.ready for s in samples]
        handles += ax.step(xs, desired, where="post", color="#95a5a6", lw=1.2, ls="--", label="desired replicas")
        handles += ax.step(xs, ready, where="post", color="#1e8449", lw=2.2, label="Ready replicas")
        outages = _outages(xs, ready, desired)
        for lo, hi in outages:
            ax.axvspan(lo, hi, color="#e74c3c", alpha=0.13, lw=0)
        if outages:
            handles.append(Patch(color="#e74c3c", alpha=0.25, lw=0, label="outage (Ready < desired)"))
        ax.set_ylim(-0.2, max(desired + ready) + 0.5)
        ax.yaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
        changed = template_changes(samples)
        if changed:
            top = max(desired + ready) + 0.25
            handles += ax.plot([xs[i] for i in changed], [top] * len(changed), ls="none", marker="v", ms=7,
                               color="#2c3e50", label="pod template changed (Tn: n-th template seen)")
            for i in changed:
                ax.annotate(f"T{samples[i].template}", (xs[i], top), xytext=(5, -3), textcoords="offset points",
                            fontsize=7.5, color="#2c3e50", va="center")
        base = samples[0].restarts
        handles += ax2.step(xs, [s.restarts - base for s in samples], where="post", color="#c0392b", lw=2,
                            label="container restarts (cumulative)", zorder=3)  # over the other line at 0
        handles += ax2.step(xs, [s.crash_looping for s in samples], where="post", color="#e67e22", lw=1.8,
                            label="pods crash-looping (crashed, not Ready since)")
        weights = [(x, s.fallback_weight) for x, s in zip(xs, samples, strict=False) if s.fallback_weight is not None]
        if weights:
            twin = ax.twinx()
            handles += twin.step([w[0] for w in weights], [w[1] for w in weights], where="post", color="#2471a3",
                                 lw=1.4, ls="-.", label="% traffic on the fallback backend")
            twin.set_ylim(-5, 110)
            twin.set_ylabel("% on fallback", color="#2471a3")
            twin.spines[["top"]].set_visible(False)
        ax2.yaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
        ax2.set_ylim(-0.3, max([2, *(s.restarts - base for s in samples)]) + 0.5)
    else:
        ax.text(0.5, 0.5, "no samples recorded", ha="center", va="center", transform=ax.transAxes)
    _draw_runs(ax, timeline, origin, handles)
    rows = _draw_marks(ax, ax2, timeline, origin)
    fig.suptitle(title, x=0.01, ha="left", fontsize=12, fontweight="bold")
    ax.set_title(subtitle(timeline), loc="left", fontsize=9.5, color="#333333", pad=8 + 11 * rows)
    ax.set_ylabel("replicas")
    ax2.set_ylabel("restarts / pods")
    ax2.set_xlabel("minutes since the fault (cluster time)")
    for axis in (ax, ax2):
        axis.grid(axis="y", color="#ecf0f1")
        axis.spines[["top", "right"]].set_visible(False)
    fig.legend(handles=handles, loc="outside lower center", ncols=4, fontsize=8, frameon=False)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


def _draw_runs(ax: plt.Axes, timeline: Timeline, origin: float, handles: list[Line2D | Patch]) -> None:
    """Each pyinfra process as a band from its start to its exit (the exit can trail the deploy's work)."""
    drawn = False
    for mark in timeline.marks:
        if mark.kind != ACTION_END:
            continue
        start = next((m for m in reversed(timeline.marks) if m.kind == ACTION and m.t <= mark.t), None)
        if start is not None:
            ax.axvspan((start.t - origin) / 60, (mark.t - origin) / 60, color="#2471a3", alpha=0.08, lw=0)
            drawn = True
    if drawn:
        handles.append(Patch(color="#2471a3", alpha=0.16, lw=0, label="pyinfra process running (start → exit)"))


def _draw_marks(ax: plt.Axes, ax2: plt.Axes, timeline: Timeline, origin: float) -> int:
    """Vertical lines through both panels, labels in rows above the top panel; returns the rows used."""
    marks = [m for m in timeline.marks if m.kind in _STYLE]
    xs = [(m.t - origin) / 60 for m in marks]
    lo, hi = ax.get_xlim()
    lo, hi = min([lo, *xs]), max([hi, *xs])
    placed = place_labels([(x, _label(m.kind, m.label)) for x, m in zip(xs, marks, strict=True)], lo, hi)
    for mark, spot in zip(marks, placed, strict=True):
        colour = _STYLE[mark.kind][0] if mark.ok else "#000000"
        for axis in (ax, ax2):
            axis.axvline(spot.x, color=colour, lw=1.1, ls="--" if mark.kind == ACTION else "-", alpha=0.85)
        ax.annotate(_label(mark.kind, mark.label), (spot.x, 1.0), xycoords=("data", "axes fraction"),
                    xytext=(3 if spot.align == "left" else -3, 3 + 11 * spot.row), textcoords="offset points",
                    fontsize=8, color=colour, va="bottom", ha=spot.align, annotation_clip=False)
    ax.set_xlim(lo, hi)
    return 1 + max((p.row for p in placed), default=-1)
