"""The success criteria of a scenario, judged on what the game recorded (pure).

Each check is one line a reviewer can act on; the game passes only when every check does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from vllm_remedy.errors import UserError
from vllm_remedy.gameday.compliance import Finding, node_product
from vllm_remedy.gameday.play import DeployRun
from vllm_remedy.gameday.scenario import Scenario
from vllm_remedy.gameday.timeline import DETECTION, FAULT, ROLLOUT_DONE, Timeline
from vllm_remedy.vllm.cmdline import find_server


@dataclass(frozen=True)
class Check:
    """One success criterion as the report prints it: name, PASS/FAIL, and the detail a reviewer can act on."""

    name: str
    ok: bool
    detail: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min"


def judge(sc: Scenario, timeline: Timeline, runs: Sequence[DeployRun], latest: dict[str, Any],
          found: Sequence[Finding]) -> list[Check]:
    """Every success criterion of ``sc`` against the recorded game."""
    want = sc.success
    det = sc.detection
    checks: list[Check] = []
    mark = timeline.first(DETECTION)
    seen = sorted({c.failure for c in timeline.classified})
    checks.append(Check("detected", mark is not None,
                        mark.label if mark else f"expected {det.kind} {det.value}; classified logs: "
                        f"{', '.join(seen) or 'none'}"))
    failed = [r for r in runs if not r.ok]
    checks.append(Check("deploys succeeded", not failed,
                        ", ".join(f"{r.deploy} exit {r.returncode}" for r in runs) or "no deploy ran"))
    ttr, projected = timeline.time_to_restore(), timeline.projected_restore()
    fault = timeline.first(FAULT)
    if ttr is None or projected is None:
        checks.append(Check("service restored", False, f"no rollout of a new template became Ready within "
                            f"{_minutes(want.within)} of the fault"))
    else:  # judged on the projection: the playbooks' start-up is not minutes long on a real cluster
        clock = f" projected ({_minutes(ttr[0])} of cluster time at {timeline.speed:g}x)" if timeline.speed else ""
        checks.append(Check("service restored", projected <= want.within,
                            f"time to restore {_minutes(projected)}{clock}, limit {_minutes(want.within)}"))
    dep = latest.get("view") or latest.get("deployment") or {}  # the target as a Deployment reads (targets.view)
    ready = int((dep.get("status") or {}).get("readyReplicas", 0))
    checks.append(Check("ready replicas", ready == want.ready_replicas,
                        f"{ready} Ready, expected {want.ready_replicas}"))
    if want.flags:
        try:
            spec = ((dep.get("spec") or {}).get("template") or {}).get("spec") or {}
            flags = dict(find_server(spec, sc.container).flags)
        except UserError as exc:
            flags, problem = {}, str(exc)
        else:
            problem = ""
        wrong = [f"--{k}={flags.get(k, '(absent)')} (expected {'absent' if v is None else v})"
                 for k, v in want.flags.items() if flags.get(k) != v]
        checks.append(Check("final flags", not wrong and not problem, problem or "; ".join(wrong) or
                            ", ".join(f"--{k}" + ("" if v is None else f"={v}") if v is not None else f"no --{k}"
                                      for k, v in want.flags.items())))
    if want.gpu_product:
        nodes = latest.get("nodes") or {}
        where = sorted({node_product(nodes.get(p["spec"].get("nodeName"), {})) or "?"
                        for p in latest.get("pods") or [] if p["spec"].get("nodeName")})
        checks.append(Check("GPU", where == [want.gpu_product], f"pods on {', '.join(where) or 'no node'}, "
                            f"expected {want.gpu_product}"))
    if want.matches_policy:
        checks.append(Check("final state matches policy", not found,
                            "; ".join(map(str, found)) or f"no finding against {sc.policy.name}"))
    if want.route_shifted:
        done = timeline.first(ROLLOUT_DONE)
        shifted = [s for s in timeline.samples if fault and s.t >= fault.t and (done is None or s.t <= done.t)
                   and (s.fallback_weight or 0) > 0 and s.ready < s.desired]
        checks.append(Check("traffic on fallback while primary down", bool(shifted),
                            f"fallback carried {max(s.fallback_weight or 0 for s in shifted)}% while "
                            f"{min(s.ready for s in shifted)}/{shifted[0].desired} primary replicas were Ready"
                            if shifted else "the route never sent traffic to the fallback backend during the outage"))
    if want.max_template_changes is not None:
        changes = timeline.template_changes()
        checks.append(Check("template changes", changes <= want.max_template_changes,
                            f"{changes} pod-template change(s) to recovery (at most {want.max_template_changes})"))
    return checks
