"""budget on a Recreate Deployment says in its plan that the GPUs the rollout frees are contested by other workloads'
Pending GPU pods (hostile15b F2/F11: Recreate freed two L40S, another Deployment's Pending pod took one, and 1 of 2 new
pods stayed Unschedulable — neither ``--dry`` nor the prompt had said so). Real pyinfra CLI, rehearsal cluster."""

from __future__ import annotations

from typing import Any

from fixtures import pyinfra_run
from fixtures.budget_world import BUDGET, LOCAL, MODEL, live_pods, scenario
from fixtures.drift_world import add_vllm_deployment
from fixtures.pyinfra_run import Rehearsal
from fixtures.restore_world import host_out, wait_until
from vllm_remedy.kube.errors import ConflictError

rehearsal = pyinfra_run.rehearsal

IMPLICIT = [MODEL, "--gpu-memory-utilization", "0.90", "--max-num-seqs", "64"]
PINME = "/apis/apps/v1/namespaces/llm/deployments/pinme"


def recreate_beside_a_pending_rival(rehearsal: Rehearsal) -> str:
    """llama-8b (Recreate, --max-model-len implicit: budget writes it) on two L40S; pinme (two L40S replicas) holds the
    third and waits with its second pod Pending. The rival pod's name."""
    def implicit(dep: dict[str, Any]) -> None:
        dep["spec"]["template"]["spec"]["containers"][0]["args"] = list(IMPLICIT)
        dep["spec"]["strategy"] = {"type": "Recreate"}
    scenario(rehearsal, implicit, "drop --max-model-len; Recreate")
    assert len(live_pods(rehearsal)) == 2
    add_vllm_deployment(rehearsal, "pinme")
    client = rehearsal.client()
    for _ in range(5):  # read-modify-write, again when the controller's status write moved it on (409)
        body = client.request("GET", PINME)
        body["spec"]["replicas"] = 2
        try:
            client.request("PUT", PINME, body=body)
            break
        except ConflictError:
            continue
    else:
        raise AssertionError("pinme could not be scaled to 2")

    def one_waits() -> bool:
        found = client.list_pods("llm", "app=pinme")
        return len(found) == 2 and sum(any(c.get("reason") == "Unschedulable" for c in (p.get("status") or {}).get(
            "conditions") or []) for p in found) == 1
    wait_until(one_waits, what="pinme's second pod to wait for a GPU")
    (rival,) = [p["metadata"]["name"] for p in client.list_pods("llm", "app=pinme") if not p["spec"].get("nodeName")]
    return rival


def test_the_plan_says_the_gpus_a_recreate_frees_are_contested(rehearsal: Rehearsal) -> None:
    rival = recreate_beside_a_pending_rival(rehearsal)
    held = ", ".join(sorted(p["spec"]["nodeName"] for p in live_pods(rehearsal)))
    run = rehearsal.pyinfra(LOCAL, BUDGET, "--dry")
    lines = host_out(run.stderr)
    assert run.returncode == 0, run.stderr
    assert any(line.startswith("budget deployment llm/llama-8b: --max-model-len 16384") for line in lines), lines
    notes = [line for line in lines if line.startswith("note: Recreate stops every old pod first")]
    assert notes == [f"note: Recreate stops every old pod first: the 2 GPU(s) they free on {held} are contested by 1 "
                     f"Pending GPU pod(s) of other workloads (llm/{rival}), which may take them before the new pods: "
                     "then those stay Pending"], lines
