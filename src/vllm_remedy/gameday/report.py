"""The game-day report: Markdown (picture next to it) and one self-contained HTML page (picture inlined).

What a postmortem needs: the verdict and figures first, the picture, then the timeline, the classified
logs, the diffs the deploys applied with their output, and the memory model's predictions against what
the pods actually did.
"""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path
from typing import Any

from vllm_remedy.gameday.predict import compare, kv_figure
from vllm_remedy.gameday.runner import GameResult
from vllm_remedy.gameday.timeline import FAULT, Timeline

Obj = dict[str, Any]


def result_json(result: GameResult, paths: dict[str, str] | None = None) -> Obj:
    """The machine-readable game (``-o json``)."""
    tl = result.timeline
    timeline = tl.to_json()
    return {
        "scenario": result.scenario.name, "title": result.scenario.title, "cluster": result.cluster,
        "passed": result.passed, "verdict": result.verdict(), "interrupted": result.interrupted,
        "time_to_restore": timeline["time_to_restore"],
        "speed": tl.speed, "restarts_to_recovery": tl.restarts_to_recovery(),
        "template_changes_to_recovery": tl.template_changes(),
        "matches_policy": not (result.final.get("findings") or []) if result.final else None,
        "checks": [c.to_json() for c in result.checks], "deploys": [r.to_json() for r in result.runs],
        "restored": result.restored, "wall_seconds": round(result.wall_seconds, 2),
        "predictions": predictions(result), "timeline": timeline, "report": paths or {},
    }


def predictions(result: GameResult) -> list[Obj]:
    """The memory model's verdict per pod next to what the pod did, on the nodes last seen (checks the model)."""
    nodes = (result.final or {}).get("nodes") or {}
    return compare(result.pods_seen, nodes, result.timeline.classified, result.scenario.container,
                   result.timeline.marks)


def _rel(result: GameResult, t: float) -> str:
    fault = result.timeline.first(FAULT)
    origin = fault.t if fault else (result.timeline.samples[0].t if result.timeline.samples else t)
    return f"{(t - origin) / 60:+.1f}"


def _figures(result: GameResult) -> list[tuple[str, str]]:
    tl = result.timeline
    findings = (result.final or {}).get("findings")
    return [
        ("Verdict", result.verdict()),
        ("Time to restore", restore_text(tl)),
        ("Container restarts to recovery", str(tl.restarts_to_recovery())),
        ("Pod-template changes to recovery", str(tl.template_changes())),
        ("Final state matches policy", "n/a" if findings is None else ("yes" if not findings else
                                                                     "no — " + "; ".join(findings))),
        ("Cluster", result.cluster), ("Game wall time", f"{result.wall_seconds:.1f} s"),
    ]


def _in_order(marks: list[Any]) -> list[Any]:
    """Marks by cluster time (a deploy's exit is marked after the rollout it waited for was seen done)."""
    return sorted(marks, key=lambda m: (m.t, m.wall))


def restore_text(tl: Timeline) -> str:
    """The headline figure with its arithmetic: projected for a real cluster, then the rehearsal's own clocks."""
    ttr, projected = tl.time_to_restore(), tl.projected_restore()
    if ttr is None or projected is None:
        return "not restored"
    if not tl.speed:
        return f"{ttr[0] / 60:.1f} min"
    tool_cluster, tool_wall = tl.tool_seconds()
    return (f"{projected / 60:.1f} min projected for a real cluster: {ttr[0] / 60:.1f} min of cluster time at "
            f"{tl.speed:g}x, less the {tool_cluster / 60:.1f} min that the playbooks' {tool_wall:.1f} s of "
            f"start-up and decisions became at that speed ({ttr[1]:.1f} s wall)")


def _log_groups(result: GameResult) -> list[tuple[str, int, tuple[str, ...]]]:
    groups: dict[tuple[str, str], list[Any]] = {}
    for c in result.timeline.classified:
        groups.setdefault((c.failure, c.node.split("(")[-1].rstrip(")")), []).append(c)
    return [(f"{failure} on {gpu}", len(items), items[0].evidence) for (failure, gpu), items in groups.items()]


def markdown(result: GameResult, picture: str) -> str:
    """The report in a postmortem's order; ``picture`` is the PNG's path relative to the ``.md`` file."""
    sc, tl = result.scenario, result.timeline
    out = [f"# Game day: {sc.title}", "", sc.description, "", "| | |", "|---|---|"]
    out += [f"| {k} | {v} |" for k, v in _figures(result)]
    out += ["", f"![timeline]({picture})", "", "## Checks", "", "| check | result | detail |", "|---|---|---|"]
    out += [f"| {c.name} | {'PASS' if c.ok else 'FAIL'} | {c.detail} |" for c in result.checks]
    out += ["", "## Timeline", "", "| min since fault (cluster) | wall s | event |", "|---:|---:|---|"]
    start = tl.samples[0].wall if tl.samples else 0.0
    out += [f"| {_rel(result, m.t)} | {m.wall - start:.1f} | {m.label} |" for m in _in_order(tl.marks)]
    out += ["", "## Classified logs", ""]
    for label, count, evidence in _log_groups(result):
        out += [f"**{label}** — {count} crash(es)", "", "```", *evidence, "```", ""]
    if not tl.classified:
        out += ["No container crashed.", ""]
    out += ["## Remediation: what each deploy did", ""]
    for run in result.runs:
        out += [f"### `pyinfra -y <inventory> {run.deploy}` — exit {run.returncode}, {run.wall_seconds:.1f} s wall, "
                f"{run.cluster_seconds / 60:.1f} min cluster", "", "```", *run.output, "```", ""]
        out += ["```diff", *run.diff, "```", ""] if run.diff else ["No pod-template change.", ""]
    out += ["## Predictions against what happened", "",
            "| step | pod | node | image | flags | predicted | happened | KV cache predicted | KV cache actual (log) | "
            "agree |", "|---|---|---|---|---|---|---|---:|---:|---|"]
    out += [f"| {r['step']} | {r['pod']} | {r['node']} | {r['image']} | `{r['flags']}` | {r['predicted']} "
            f"({r['prediction']}) | {r['happened']} | {kv_figure(r['predicted_kv_tokens'], r['predicted_kv_gib'])} | "
            f"{kv_figure(r['actual_kv_tokens'], r['actual_kv_gib'])} | {r['agree']} |" for r in predictions(result)]
    out += ["", "## Pre-game state", "", *(f"- {line}" for line in result.restored)]
    return "\n".join(out) + "\n"


def _esc(text: Any) -> str:
    return html.escape(str(text))


def html_page(result: GameResult, png: bytes) -> str:
    """The report as one HTML file with the PNG inlined (base64), so it can be attached or mailed on its own."""
    sc, tl = result.scenario, result.timeline
    ok = result.passed
    b64 = base64.b64encode(png).decode()
    rows = "".join(f"<tr><th>{_esc(k)}</th><td>{_esc(v)}</td></tr>" for k, v in _figures(result))
    checks = "".join(f"<tr class={'ok' if c.ok else 'bad'}><td>{_esc(c.name)}</td><td>{'PASS' if c.ok else 'FAIL'}"
                     f"</td><td>{_esc(c.detail)}</td></tr>" for c in result.checks)
    start = tl.samples[0].wall if tl.samples else 0.0
    marks = "".join(f"<tr><td>{_rel(result, m.t)}</td><td>{m.wall - start:.1f}</td><td>{_esc(m.label)}</td></tr>"
                    for m in _in_order(tl.marks))
    logs = "".join(f"<h3>{_esc(label)} — {count} crash(es)</h3><pre>{_esc(chr(10).join(ev))}</pre>"
                   for label, count, ev in _log_groups(result)) or "<p>No container crashed.</p>"
    runs = "".join(
        f"<h3><code>pyinfra -y &lt;inventory&gt; {_esc(r.deploy)}</code> — exit {r.returncode}</h3>"
        f"<pre>{_esc(chr(10).join(r.output))}</pre>"
        + (f"<pre class=diff>{_diff_html(r.diff)}</pre>" if r.diff else "<p>No pod-template change.</p>")
        for r in result.runs)
    preds = "".join(f"<tr><td>{_esc(r['step'])}</td><td>{_esc(r['pod'])}</td><td>{_esc(r['node'])}</td>"
                    f"<td>{_esc(r['image'])}</td><td><code>{_esc(r['flags'])}</code></td><td>{_esc(r['predicted'])} "
                    f"({_esc(r['prediction'])})</td><td>{_esc(r['happened'])}</td>"
                    f"<td>{_esc(kv_figure(r['predicted_kv_tokens'], r['predicted_kv_gib']))}</td>"
                    f"<td>{_esc(kv_figure(r['actual_kv_tokens'], r['actual_kv_gib']))}</td>"
                    f"<td>{_esc(r['agree'])}</td></tr>" for r in predictions(result))
    restored = "".join(f"<li>{_esc(line)}</li>" for line in result.restored)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Game day: {_esc(sc.title)}</title>
<style>body{{font:14px/1.45 system-ui,sans-serif;max-width:1100px;margin:2em auto;color:#222}}
table{{border-collapse:collapse;margin:.5em 0}}td,th{{border:1px solid #ddd;padding:3px 8px;text-align:left;
vertical-align:top}}pre{{background:#f6f8fa;padding:8px;overflow-x:auto;font-size:12px}}
.ok td:nth-child(2){{color:#1e8449}}
.bad td:nth-child(2){{color:#c0392b;font-weight:bold}}.verdict{{font-size:1.3em;font-weight:bold;
color:{'#1e8449' if ok else '#c0392b'}}}.add{{color:#1e8449}}.del{{color:#c0392b}}img{{max-width:100%}}</style>
</head><body><h1>Game day: {_esc(sc.title)}</h1><p class=verdict>{_esc(result.verdict())}</p>
<p>{_esc(sc.description)}</p><table>{rows}</table>
<img alt="Ready replicas and restarts over time, actions marked" src="data:image/png;base64,{b64}">
<h2>Checks</h2><table><tr><th>check</th><th>result</th><th>detail</th></tr>{checks}</table>
<h2>Timeline</h2><table><tr><th>min since fault (cluster)</th><th>wall s</th><th>event</th></tr>{marks}</table>
<h2>Classified logs</h2>{logs}<h2>Remediation: what each deploy did</h2>{runs}
<h2>Predictions against what happened</h2><table><tr><th>step</th><th>pod</th><th>node</th><th>image</th>
<th>flags</th><th>predicted</th><th>happened</th><th>KV cache predicted</th><th>KV cache actual (log)</th><th>agree</th>
</tr>{preds}</table>
<h2>Pre-game state</h2><ul>{restored}</ul></body></html>
"""


def _diff_html(lines: list[str]) -> str:
    out = []
    for line in lines:
        cls = "add" if line.startswith("+") and not line.startswith("+++") else (
            "del" if line.startswith("-") and not line.startswith("---") else "")
        out.append(f"<span class={cls}>{_esc(line)}</span>" if cls else _esc(line))
    return "\n".join(out)


def write_report(result: GameResult, folder: Path) -> dict[str, str]:
    """Write ``<scenario>.md``, ``<scenario>.png``, ``<scenario>.html`` and ``<scenario>.json`` into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    name = result.scenario.name
    # matplotlib is ~0.37 s of imports: only a game that gets this far pays it, not a refused or unknown scenario
    from vllm_remedy.gameday.picture import render_png

    png = render_png(result.timeline, result.scenario.title)
    paths = {kind: str((folder / f"{name}.{kind}").resolve()) for kind in ("md", "html", "png", "json")}
    Path(paths["png"]).write_bytes(png)
    Path(paths["md"]).write_text(markdown(result, f"{name}.png"))
    Path(paths["html"]).write_text(html_page(result, png))
    Path(paths["json"]).write_text(json.dumps(result_json(result, paths), indent=1))
    return paths


def summary_table(results: list[tuple[GameResult, dict[str, str]]]) -> str:
    """Markdown table for ``--all``: one row per scenario."""
    lines = ["| scenario | verdict | time to restore (projected) | cluster time | game wall time | restarts | "
             "template changes | report |", "|---|---|---:|---:|---:|---:|---:|---|"]
    for result, paths in results:
        tl = result.timeline
        ttr, projected = tl.time_to_restore(), tl.projected_restore()
        lines.append(f"| {result.scenario.name} | {result.verdict()} | "
                     f"{f'{projected / 60:.1f} min' if projected is not None else '—'} | "
                     f"{f'{ttr[0] / 60:.1f} min' if ttr else '—'} | {result.wall_seconds:.1f} s | "
                     f"{tl.restarts_to_recovery()} | {tl.template_changes()} | {paths.get('html', '')} |")
    return "\n".join(lines) + "\n"
