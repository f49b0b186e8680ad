"""Steps 4/5 deploys when the world misbehaves: API faults and a concurrent edit (issue 5, "Proof").

budget.py, pin_gpu.py, enforce_eager.py and load_guard.py each make one guarded write and then wait, so
they share one shape: a scenario, one planned change with a known summary, a known end state. Each case
runs the real pyinfra CLI against the rehearsal cluster and asserts the exact end state or the one-line
failure, and that nothing was overwritten. (budget.py's concurrent-edit test lives in tests/deploys/test_budget.py.)
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from fixtures import pyinfra_run
from fixtures.budget_world import (
    BUDGET,
    EAGER,
    GOOD_ARGS,
    LOAD_GUARD,
    MODEL,
    PIN,
    args_of,
    deployment,
    live_pods,
    prompted_run,
    quiet,
    rolled_out,
    scenario,
    with_args,
)
from fixtures.pyinfra_run import Rehearsal
from fixtures.restore_world import (
    L4_TOLERATION,
    PATCH_DOWN,
    PATH,
    host_out,
    run_with_outage,
    vllm_runtime,
    with_grace,
)
from vllm_remedy.kube.annotations import parse_rfc3339, template_digest

rehearsal = pyinfra_run.rehearsal

Obj = dict[str, Any]
REVISION = "deployment.kubernetes.io/revision"
#: Annotations that carry the cluster time of the write: compared by their relation, not their value.
TIMED = ("vllm-remedy.io/last-action-at", "vllm-remedy.io/enforce-eager-expires")
IMPLICIT = [MODEL, "--gpu-memory-utilization", "0.90", "--max-num-seqs", "64"]
BIG_PREFILL = [*GOOD_ARGS, "--max-num-batched-tokens", "16384"]
BUDGET_REASON = ("max-model-len: set max-model-len explicitly to 16,384 (never the model's default); max concurrency "
                 "12.08x ≥ 10.00x needed; nothing else changes")
PIN_REASON = "pin nvidia.com/gpu.product=NVIDIA-L40S, 1 GPU(s) per pod"
LOAD_REASON = "OOM under load (step 5): cap per policy: --max-num-batched-tokens 4096"
EAGER_PRIOR = ('{"args":["meta-llama/Llama-3.1-8B-Instruct","--revision","0e9e39f249a16976918f6564b8830bc894c89659",'
               '"--max-model-len","16384","--gpu-memory-utilization","0.90","--max-num-seqs","64"],'
               '"command":["vllm","serve"],"container":"vllm"}')
CHANGE_ID = "vllm-remedy.io/change-id"


#: Transient trouble: flaky Deployment reads and writes, apiserver timeouts (504) on what the wait reads, latency.
FLAKY = [{"verb": "*", "resource": "deployments", "error_rate": 0.3, "error_code": 503},
         {"verb": "patch", "resource": "deployments", "error_rate": 0.5, "error_code": 500},
         {"verb": "list", "resource": "pods", "error_rate": 0.3, "error_code": 504},
         {"verb": "*", "resource": "*", "latency_ms": 5}]
#: The API refusing every write for a while (first phase of the transient test; for good in the failing one).


def on_l4(dep: Obj) -> None:
    """The incident's scheduling half: nodeSelector moved to the GKE L4 pool (flags kept)."""
    spec = dep["spec"]["template"]["spec"]
    spec["nodeSelector"] = {"cloud.google.com/gke-accelerator": "nvidia-l4"}
    spec["tolerations"] = [dict(L4_TOLERATION)]


def set_args(args: list[str]) -> Callable[[Obj], None]:
    def edit(template: Obj) -> None:
        template["spec"]["containers"][0]["args"] = list(args)
    return edit


def pin_l40s(template: Obj) -> None:
    template["spec"]["nodeSelector"] = {"nvidia.com/gpu.product": "NVIDIA-L40S"}


def baseline(rehearsal: Rehearsal) -> Obj:
    """Revision 14 as seeded (healthy): what enforce_eager.py is run on."""
    vllm_runtime(rehearsal)
    return quiet(rehearsal)


@dataclass(frozen=True)
class Case:
    """One deploy: the scenario it fixes, the write it plans, the end state a clean run leaves."""

    deploy: str
    setup: Callable[[Rehearsal], Obj]
    summary: str  # the write's label, which starts its one line of outcome
    edit: Callable[[Obj], None]  # the clean run's change to the pod template
    action: str
    reason: str  # last-action-reason; "{expires}" stands for the toggle's expiry
    extra: dict[str, str] = field(default_factory=dict)  # further annotations the write sets
    args: tuple[str, ...] = ()


CASES = {
    "budget": Case(BUDGET, lambda r: scenario(r, with_args(IMPLICIT), "drop --max-model-len"),
                   "budget deployment llm/llama-8b: --max-model-len 16384 (max-model-len, rung 1 of 1)",
                   set_args([*IMPLICIT, "--max-model-len", "16384"]), "budget", BUDGET_REASON),
    "pin": Case(PIN, lambda r: scenario(r, on_l4, "move to the L4 pool"),
                "pin deployment llm/llama-8b to nvidia.com/gpu.product=NVIDIA-L40S with 1 GPU(s) per pod",
                pin_l40s, "pin-gpu", PIN_REASON),
    "eager": Case(EAGER, baseline, "turn on --enforce-eager on deployment llm/llama-8b for 2h",
                  set_args([*GOOD_ARGS, "--enforce-eager"]), "enforce-eager",
                  "--enforce-eager until {expires} (temporary; reverts on the next run after)",
                  {"vllm-remedy.io/enforce-eager-prior": EAGER_PRIOR},
                  ("--data", "eager_ttl=2h")),
    "load_guard": Case(LOAD_GUARD, lambda r: scenario(r, with_args(BIG_PREFILL), "bigger prefill chunks"),
                       "cap load on deployment llm/llama-8b: --max-num-batched-tokens 4096",
                       set_args([*GOOD_ARGS, "--max-num-batched-tokens", "4096"]), "load-guard", LOAD_REASON),
}
ALL = pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
#: budget.py's concurrent-edit test is in tests/deploys/test_budget.py.
OTHERS = pytest.mark.parametrize("case", [CASES[k] for k in ("pin", "eager", "load_guard")],
                                 ids=["pin", "eager", "load_guard"])


def assert_clean_end_state(case: Case, before: Obj, after: Obj) -> None:
    """``after`` is exactly what a clean run of ``case`` leaves on ``before``: one write, nothing else."""
    wanted = copy.deepcopy(before["spec"]["template"])
    case.edit(wanted)
    assert after["spec"]["template"] == wanted
    assert after["spec"]["strategy"] == before["spec"]["strategy"]
    assert after["spec"]["replicas"] == before["spec"]["replicas"]
    assert after["metadata"]["generation"] == before["metadata"]["generation"] + 1  # written once
    notes = after["metadata"]["annotations"]
    at = parse_rfc3339(notes[TIMED[0]])
    expires = notes.get(TIMED[1])
    if case.deploy == EAGER:
        assert expires is not None and parse_rfc3339(expires) == at + 7200
    reason = case.reason.format(expires=expires)
    assert re.fullmatch(r"[0-9a-f]{16}", notes[CHANGE_ID]), notes  # the one write, recognisable by its id
    assert {k: v for k, v in notes.items() if k not in (*TIMED, CHANGE_ID)} == {
        "kubernetes.io/change-cause": f"vllm-remedy {case.action}: {reason}",
        REVISION: str(int(before["metadata"]["annotations"][REVISION]) + 1),
        "vllm-remedy.io/last-action": case.action,
        "vllm-remedy.io/last-action-reason": reason,
        # the pods our write left: how restore later tells our revision from a colleague's
        "vllm-remedy.io/last-action-template": template_digest(after["spec"]["template"]),
        **case.extra,
    }


@ALL
def test_transient_5xx_timeouts_and_latency_converge_to_the_clean_end_state(rehearsal: Rehearsal,
                                                                            case: Case) -> None:
    before = case.setup(rehearsal)
    got = run_with_outage(rehearsal, case.deploy, case.args, FLAKY)
    assert got.returncode == 0, got.stderr
    assert "Traceback" not in got.stderr
    assert f"PATCH {PATH}: HTTP 503; retrying" in got.stderr  # the write itself met the outage
    lines = host_out(got.stderr)
    outcome = [line for line in lines if line.startswith(f"{case.summary}: ")]
    assert len(outcome) == 1 and outcome[0].startswith(f"{case.summary}: written (resourceVersion "), lines
    after = rolled_out(rehearsal)
    assert_clean_end_state(case, before, after)
    assert all(p["spec"]["nodeName"].startswith("gpu-l40s-") for p in live_pods(rehearsal))


@ALL
def test_a_write_the_api_keeps_refusing_fails_the_host_in_one_line_and_changes_nothing(rehearsal: Rehearsal,
                                                                                      case: Case) -> None:
    before = case.setup(rehearsal)
    rehearsal.faults([PATCH_DOWN])
    try:
        got = rehearsal.pyinfra(with_grace(rehearsal.tmp, "1s"), case.deploy, "-y", *case.args)
    finally:
        rehearsal.faults([])
    assert got.returncode == 1, got.stderr
    assert "Traceback" not in got.stderr
    failed = [line for line in host_out(got.stderr) if "HTTP 503" in line]
    assert len(failed) == 1 and re.fullmatch(
        re.escape(f"{case.summary}: rehearsal: deployment llm/llama-8b: rehearsal: PATCH {PATH}: HTTP 503: injected "
                  "fault: 503 on patch (after 5 attempts); outcome unknown: the API did not answer; change ")
        + "[0-9a-f]{16}" + re.escape(" may still land — rerun to see (a landed change is recognised by its id, "
                                     "vllm-remedy.io/change-id)"), failed[0]), host_out(got.stderr)
    after = deployment(rehearsal)
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert after["spec"] == before["spec"]


def someone_else(dep: Obj) -> None:
    """A colleague's edit landing between the diff pyinfra showed and its execution: template and metadata."""
    dep["metadata"].setdefault("annotations", {})["team"] = "edited meanwhile"
    dep["spec"]["template"]["spec"]["containers"][0]["env"].append({"name": "VLLM_LOGGING_LEVEL", "value": "DEBUG"})


@OTHERS
def test_a_concurrent_edit_is_refused_and_never_overwritten(rehearsal: Rehearsal, case: Case) -> None:
    before = case.setup(rehearsal)
    theirs: list[Obj] = []
    got = prompted_run(rehearsal, case.deploy, lambda: theirs.append(rehearsal.change(someone_else)))
    assert len(theirs) == 1 and "Press enter to execute" in got.stderr, got.stderr  # edited at the prompt
    assert got.returncode == 1, got.stderr
    assert "Traceback" not in got.stderr
    failed = [line for line in host_out(got.stderr) if line.startswith(f"{case.summary}: ")]
    assert failed == [f"{case.summary}: rehearsal: deployment llm/llama-8b changed since it was read (HTTP 422); "
                      "nothing was written — re-run to plan against the new state"], host_out(got.stderr)
    after = deployment(rehearsal)
    assert after["spec"] == theirs[0]["spec"]  # their edit, whole; ours not written over it
    assert args_of(after) == args_of(before)
    assert after["spec"]["template"]["spec"]["containers"][0]["env"][-1] == {"name": "VLLM_LOGGING_LEVEL",
                                                                             "value": "DEBUG"}
    notes = after["metadata"]["annotations"]
    assert notes["team"] == "edited meanwhile"
    assert not [key for key in notes if key.startswith("vllm-remedy.io/")], notes
