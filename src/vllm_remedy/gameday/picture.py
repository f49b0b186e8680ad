"""The postmortem picture: Ready replicas and container restarts over the incident, actions marked.

Minutes on the x axis are cluster minutes from the fault (what the incident would take for real); the
shaded band is the outage (fewer Ready replicas than desired), vertical lines are the timeline's marks.
Matplotlib with the Agg backend: no display, deterministic PNG bytes for the report.
"""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from vllm_remedy.gameday.timeline import (
    ACTION,
    ACTION_END,
    CONFIRM,
    DETECTION,
    FAULT,
    FIRST_CRASH,
    RESTORE,
    ROLLOUT_DONE,
    Timeline,
)

_STYLE = {  # mark kind → (colour, short label)
    FAULT: ("#c0392b", "fault"), FIRST_CRASH: ("#e67e22", "first crash"), DETECTION: ("#8e44ad", "detected"),
    ACTION: ("#2471a3", "run"), ROLLOUT_DONE: ("#1e8449", "restored"), CONFIRM: ("#117a65", "confirmed"),
    RESTORE: ("#7f8c8d", "pre-game restore"),
}


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


def render_png(timeline: Timeline, title: str) -> bytes:
    """The picture as PNG bytes (empty timeline → a figure that says so)."""
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(11, 5.6), sharex=True, height_ratios=[3, 2],
                                  constrained_layout=True)
    fault = timeline.first(FAULT)
    samples = timeline.samples
    origin = fault.t if fault else (samples[0].t if samples else 0.0)
    xs = [(s.t - origin) / 60 for s in samples]
    if samples:
        desired = [s.desired for s in samples]
        ready = [s.ready for s in samples]
        ax.step(xs, desired, where="post", color="#95a5a6", lw=1.2, ls="--", label="desired replicas")
        ax.step(xs, ready, where="post", color="#1e8449", lw=2.2, label="Ready replicas")
        for i, (lo, hi) in enumerate(_outages(xs, ready, desired)):
            ax.axvspan(lo, hi, color="#e74c3c", alpha=0.13, lw=0, label="outage (Ready < desired)" if i == 0 else None)
        ax.set_ylim(-0.2, max(desired + ready) + 0.9)
        ax.yaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
        base = samples[0].restarts
        ax2.step(xs, [s.restarts - base for s in samples], where="post", color="#c0392b", lw=2,
                 label="container restarts (cumulative)")
        ax2.step(xs, [s.crash_looping for s in samples], where="post", color="#e67e22", lw=1.2, ls=":",
                 label="pods in CrashLoopBackOff")
        weights = [(x, s.fallback_weight) for x, s in zip(xs, samples, strict=False) if s.fallback_weight is not None]
        if weights:
            twin = ax.twinx()
            twin.step([w[0] for w in weights], [w[1] for w in weights], where="post", color="#2471a3", lw=1.4,
                      ls="-.", label="% traffic on fallback")
            twin.set_ylim(-5, 110)
            twin.set_ylabel("% on fallback", color="#2471a3")
            twin.legend(loc="center right", fontsize=8, frameon=False)
        ax2.yaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
        ax2.set_ylim(bottom=-0.3)
    else:
        ax.text(0.5, 0.5, "no samples recorded", ha="center", va="center", transform=ax.transAxes)
    top = ax.get_ylim()[1]
    placed: list[float] = []
    for mark in timeline.marks:
        if mark.kind not in _STYLE:
            continue
        x = (mark.t - origin) / 60
        colour = _STYLE[mark.kind][0] if mark.ok else "#000000"
        for axis in (ax, ax2):
            axis.axvline(x, color=colour, lw=1.1, ls="-" if mark.kind != ACTION else "--", alpha=0.85)
        level = sum(1 for p in placed if abs(p - x) < max(1.0, (xs[-1] - xs[0]) / 14 if xs else 1.0))
        placed.append(x)
        ax.annotate(_label(mark.kind, mark.label), (x, top), xytext=(3, -12 - 11 * level), textcoords="offset points",
                    fontsize=8, color=colour, rotation=0, va="top", ha="left",
                    bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.8})
    for mark in timeline.marks:  # a deploy's run as a band from start to exit
        if mark.kind == ACTION_END:
            start = next((m for m in reversed(timeline.marks) if m.kind == ACTION and m.t <= mark.t), None)
            if start is not None:
                ax.axvspan((start.t - origin) / 60, (mark.t - origin) / 60, color="#2471a3", alpha=0.07, lw=0)
    ttr = timeline.time_to_restore()
    sub = f"time to restore {ttr[0] / 60:.1f} min (cluster) · {ttr[1]:.1f} s wall" if ttr else "not restored"
    ax.set_title(f"{title}\n{sub}", fontsize=11, loc="left")
    ax.set_ylabel("replicas")
    ax2.set_ylabel("restarts / pods")
    ax2.set_xlabel("minutes since the fault (cluster time" + (f", {timeline.speed:g}x" if timeline.speed else "")
                   + ")")
    ax.axvspan(0, 0, color="#2471a3", alpha=0.07, lw=0, label="a deploy running")
    ax.legend(loc="lower right", fontsize=8, frameon=False)
    ax2.legend(loc="upper left", fontsize=8, frameon=False)
    for axis in (ax, ax2):
        axis.grid(axis="y", color="#ecf0f1")
        axis.spines[["top", "right"]].set_visible(False)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()
