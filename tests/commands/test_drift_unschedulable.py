"""drift: a workload serving nothing while its pods stay unschedulable past the policy's restore.rollout_timeout is
drift, with capacity advice — not "in sync, none crash-looping", exit 0 (hostile15b F10; real drift CLI, rehearsal
cluster).

llama-8b holds the three L40S GPUs; t0 (its template, one replica) waits Pending: "0/6 nodes are available". Before,
drift printed "t0: in sync" and "ok crash-loop: 1 pod(s) of revision 1, none crash-looping", exit 0 — the Pushgateway
metric said healthy for a service serving nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fixtures import pyinfra_run
from fixtures.budget_world import live_pods, rolled_out
from fixtures.drift_world import add_vllm_deployment, as_json, inventory, policy
from fixtures.pyinfra_run import Rehearsal
from fixtures.restore_world import vllm_runtime, wait_until
from vllm_remedy.kube.errors import ConflictError

rehearsal = pyinfra_run.rehearsal

T0 = "@k8s/rehearsal/llm/t0"
CAPACITY_FIX = ("no deploy makes room for Pending pods: free a GPU on a node they may use (another workload's pod, a "
                "cordoned node) or add nodes, or move them with deploys/pin_gpu.py to a product with room (it refuses "
                "one without)")
PATH = "/apis/apps/v1/namespaces/llm/deployments/t0"
TARGET = ("target: {namespaces: [llm], deployments: [t0], models: [meta-llama/Llama-3.1-8B-Instruct]}\n"
          "known_good: []\n")


def t0_pending(rehearsal: Rehearsal) -> float:
    """llama-8b on all three L40S nodes; t0 (one replica, pinned to L40S) unschedulable. When it was scaled up
    (cluster time)."""
    vllm_runtime(rehearsal)

    def three(dep: dict[str, Any]) -> None:
        dep["spec"]["replicas"] = 3
        dep["spec"]["strategy"] = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}
    rehearsal.change(three, change_cause="3 replicas, one per L40S node")
    rolled_out(rehearsal)
    assert len(live_pods(rehearsal)) == 3
    add_vllm_deployment(rehearsal, "t0")
    client = rehearsal.client()
    scaled = 0.0
    for _ in range(20):
        body = client.request("GET", PATH)
        body["spec"]["replicas"] = 1
        try:
            client.request("PUT", PATH, body=body)
            scaled = client.server_time()
            break
        except ConflictError:
            continue

    def unschedulable() -> bool:
        found = client.list_pods("llm", "app=t0")
        return bool(found) and all(c.get("reason") == "Unschedulable" for p in found
                                   for c in (p.get("status") or {}).get("conditions") or []
                                   if c.get("type") == "PodScheduled")
    wait_until(unschedulable, what="t0's pod to be unschedulable")
    return scaled


def test_a_workload_serving_nothing_with_pods_unschedulable_is_drift_with_capacity_advice(
        rehearsal: Rehearsal, tmp_path: Path, cli) -> None:
    scaled = t0_pending(rehearsal)
    client = rehearsal.client()
    wait_until(lambda: client.server_time() - scaled > 16 * 60, what="16 cluster minutes of t0 serving nothing")
    inv = inventory(tmp_path, rehearsal.kubeconfig, policy(tmp_path, TARGET), hosts=[T0])

    got = cli("drift", "-i", inv, "-o", "json")
    doc = as_json(got)
    host = doc["hosts"][0]
    assert got.returncode == 1, host
    assert (host["status"], host["drifted"], doc["status"]["result"]) == ("Drifted", ["unschedulable"], "Drift")
    row = next(c for c in host["checks"] if c["check"] == "unschedulable")
    assert row["detail"].startswith("0 of 1 Ready: 1 Pending (Unschedulable: 0/"), row
    assert "longer than restore.rollout_timeout 15m" in row["detail"], row
    assert host["fix"]["note"] == CAPACITY_FIX, host["fix"]
    assert "known-good unit" not in host["fix"]["note"]

    human = cli("drift", "-i", inv)
    assert human.returncode == 1
    lines = human.stdout.splitlines()
    assert lines[0] == f"{T0}: DRIFTED (unschedulable)", human.stdout
    assert any(line.strip().startswith("DRIFT unschedulable: 0 of 1 Ready: 1 Pending (Unschedulable:")
               for line in lines), human.stdout
    assert cli("drift", "-i", inv, "--detailed-exitcode").returncode == 2


def test_within_the_rollout_timeout_the_row_says_so_and_the_host_stays_in_sync(rehearsal: Rehearsal, tmp_path: Path,
                                                                               cli) -> None:
    """A pod Pending for less than restore.rollout_timeout is a rollout under way, not drift; the row still says it."""
    t0_pending(rehearsal)
    inv = inventory(tmp_path, rehearsal.kubeconfig, policy(tmp_path, TARGET + "restore: {rollout_timeout: 24h}\n"),
                    hosts=[T0])
    got = cli("drift", "-i", inv, "-o", "json")
    host = as_json(got)["hosts"][0]
    assert got.returncode == 0 and host["status"] == "InSync", host
    row = next(c for c in host["checks"] if c["check"] == "unschedulable")
    assert row["status"] == "pass" and "within restore.rollout_timeout 1d" in row["detail"], row

