"""A Deployment already pinned to the policy's product needs no pin write, even when every GPU of that product is
taken and its pods are Pending: the pin step is a noop, not a refusal, so the budget step after it runs and drift
reports no refused fix. Before, the pin refused ("no schedulable NVIDIA-L40S capacity"), every deploy on the host
stopped there with exit 1, and drift printed "fix refused" under "in sync", exit 0 (real pyinfra CLI and drift CLI,
rehearsal cluster, ``--dry``, ``-y`` and the prompt)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from fixtures import pyinfra_run
from fixtures.budget_world import BUDGET, PIN, live_pods, prompted_run, rolled_out
from fixtures.drift_world import add_vllm_deployment, as_json, inventory, policy
from fixtures.dry_run import raw_host_lines
from fixtures.pyinfra_run import Rehearsal
from fixtures.restore_world import vllm_runtime, wait_until
from vllm_remedy.kube.errors import ConflictError

rehearsal = pyinfra_run.rehearsal

T0 = "@k8s/rehearsal/llm/t0"
PATH = "/apis/apps/v1/namespaces/llm/deployments/t0"
TARGET = ("target: {namespaces: [llm], deployments: [t0], models: [meta-llama/Llama-3.1-8B-Instruct]}\n"
          "known_good: []\n")
NOOP = "noop: deployment llm/t0 is already pinned to nvidia.com/gpu.product=NVIDIA-L40S with 1 GPU(s) per pod"


def edit_t0(rehearsal: Rehearsal, mutate: Callable[[dict[str, Any]], None]) -> None:
    """Read, change, write t0 (again if its controller wrote status in between: 409)."""
    client = rehearsal.client()
    for _ in range(20):
        body = client.request("GET", PATH)
        mutate(body)
        try:
            client.request("PUT", PATH, body=body)
            return
        except ConflictError:
            continue
    raise AssertionError("t0 kept changing under the edit")


def pending_beside_a_full_pool(rehearsal: Rehearsal, tmp_path: Path, selector: dict[str, str] | None = None) -> str:
    """llama-8b holds the three L40S GPUs; t0 (llama-8b's template, pinned to L40S, or by ``selector``) waits
    Pending. Its inventory."""
    vllm_runtime(rehearsal)

    def three(dep: dict[str, Any]) -> None:
        dep["spec"]["replicas"] = 3
        dep["spec"]["strategy"] = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}

    rehearsal.change(three, change_cause="3 replicas, one per L40S node")
    rolled_out(rehearsal)
    assert len(live_pods(rehearsal)) == 3
    add_vllm_deployment(rehearsal, "t0")
    client = rehearsal.client()

    def one(body: dict[str, Any]) -> None:
        body["spec"]["replicas"] = 1
        if selector is not None:
            body["spec"]["template"]["spec"]["nodeSelector"] = dict(selector)
    edit_t0(rehearsal, one)

    def unschedulable() -> bool:
        found = client.list_pods("llm", "app=t0")
        return bool(found) and all(c.get("reason") == "Unschedulable" for p in found
                                   for c in (p.get("status") or {}).get("conditions") or []
                                   if c.get("type") == "PodScheduled")
    wait_until(unschedulable, what="t0's pod to be unschedulable")
    return inventory(tmp_path, rehearsal.kubeconfig, policy(tmp_path, TARGET), hosts=[T0])


def test_an_already_pinned_deployment_on_a_full_pool_is_a_noop_and_the_budget_runs(rehearsal: Rehearsal,
                                                                                    tmp_path: Path, cli) -> None:
    inv = pending_beside_a_full_pool(rehearsal, tmp_path)
    version = rehearsal.client().request("GET", PATH)["metadata"]["resourceVersion"]

    pin = rehearsal.pyinfra(inv, PIN, "--dry")
    lines = raw_host_lines(pin.stderr, T0)
    assert pin.returncode == 0 and NOOP in lines, pin.stderr
    assert not [line for line in lines if line.startswith("refused")], lines

    for run in (rehearsal.pyinfra(inv, BUDGET, "--dry"), rehearsal.pyinfra(inv, BUDGET, "-y"),
                prompted_run(rehearsal, BUDGET, lambda: None, inventory=inv)):
        lines = raw_host_lines(run.stderr, T0)
        assert NOOP in lines, run.stderr
        assert not [line for line in lines if line.startswith(("refused", "not run"))], run.stderr
        # the budget step ran: the template fits with headroom and its --max-model-len is explicit
        assert [line for line in lines if line.startswith("noop: deployment llm/t0 fits on NVIDIA-L40S")], run.stderr
        if "--dry" not in run.args:  # what is left is the truth: its pod waits for a GPU, not a refusal
            assert run.returncode == 1, run.stderr
            assert [line for line in lines if line.startswith("wait for deployment llm/t0 to roll out: unschedulable")
                    ], run.stderr
        else:
            assert run.returncode == 0, run.stderr
    assert rehearsal.client().request("GET", PATH)["metadata"]["resourceVersion"] == version  # nothing written

    got = cli("drift", "-i", inv, "-o", "json")
    host = as_json(got)["hosts"][0]
    assert host["fix"]["refused"] is None, host["fix"]
    text = cli("drift", "-i", inv).stdout
    assert "fix refused" not in text, text


def test_drift_never_prints_a_refused_fix_under_in_sync(rehearsal: Rehearsal, tmp_path: Path, cli) -> None:
    """t0 pinned to the L40S by Karpenter's label: every drift check passes (the product is right), but the pin
    rewrites the label to the policy's key, a write with no free L40S GPU for its pod: refused, and a deploy run
    stops there. The host is FixRefused (exit 3, in both conventions), never "in sync" under a printed refusal."""
    inv = pending_beside_a_full_pool(rehearsal, tmp_path, {"karpenter.k8s.aws/instance-gpu-name": "l40s"})
    deploy = rehearsal.pyinfra(inv, BUDGET, "--dry")
    assert deploy.returncode == 1, deploy.stderr
    assert [line for line in raw_host_lines(deploy.stderr, T0) if line.startswith(
        "refused: pin deployment llm/t0 to NVIDIA-L40S: no schedulable NVIDIA-L40S capacity")], deploy.stderr

    got = cli("drift", "-i", inv, "-o", "json")
    doc = as_json(got)
    host = doc["hosts"][0]
    assert got.returncode == 3, host
    assert (host["status"], host["drifted"], doc["status"]["result"]) == ("FixRefused", [], "DriftFixRefused")
    assert next(c for c in host["checks"] if c["check"] == "gpu-pinned")["status"] == "pass"
    assert host["fix"]["refused"]["operation"] == "Pin the GPU type", host["fix"]
    assert host["fix"]["note"].startswith("no check drifted, but the deploys refuse here (Pin the GPU type")
    human = cli("drift", "-i", inv)
    assert human.returncode == 3
    assert human.stdout.splitlines()[0] == f"{T0}: FIX REFUSED: no check drifted, but a deploy run stops at a refusal"
    assert cli("drift", "-i", inv, "--detailed-exitcode").returncode == 3
