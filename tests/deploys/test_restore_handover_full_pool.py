"""restore's hand-over to the budget switches a rollout on a full GPU pool to maxSurge 0 / maxUnavailable 1 in the same
guarded write, as the pin and the budget's rung do (real pyinfra CLI, rehearsal cluster, ``--dry`` then ``-y``).

The L40S pool is gone (cordoned) and the L4 pool untainted; revisions 15 and 16 crash-loop on the two L4 GPUs, and the
Deployment's strategy is the default RollingUpdate 25 % / 25 %. No earlier revision is predicted to serve, so restore
hands over: revision 14 pinned to NVIDIA-L4. Before, that template was written with the default surge: the surge pod
stayed Pending (both L4 GPUs held by the crashing pods), maxUnavailable rounded to 0 took no old pod down, and the wait
failed — operations/handover.py wrote with ``set_template``, the one pod-template write that ignored the switch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fixtures import pyinfra_run
from fixtures.budget_world import live_pods, rolled_out
from fixtures.dry_run import dry_then_apply
from fixtures.pyinfra_run import ROOT, Rehearsal
from fixtures.restore_world import (
    BAD_ARGS,
    RESTORE,
    crash_looping,
    deployment,
    host_out,
    incident,
    pods,
    replicaset,
    wait_until,
    write_inventory,
)

rehearsal = pyinfra_run.rehearsal

DEFAULT = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}}
SWITCHED = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}
LINE = ("strategy: RollingUpdate maxSurge 25%, maxUnavailable 25% -> RollingUpdate maxSurge 0, maxUnavailable 1: "
        "no free NVIDIA-L4 GPU for a surge pod, so pods are replaced one at a time")


def l40s_gone_two_bad_revisions_on_a_full_l4_pool(rehearsal: Rehearsal, tmp: Path) -> str:
    """The world of test_restore_evidence's hand-over, then the default strategy; the L4 policy's inventory."""
    client = rehearsal.client()
    for node in client.list_nodes():
        labels = node["metadata"]["labels"]
        path = f"/api/v1/nodes/{node['metadata']['name']}"
        if labels.get("nvidia.com/gpu.product") == "NVIDIA-L40S":
            ops = [{"op": "add", "path": "/spec/unschedulable", "value": True}]
        elif labels.get("nvidia.com/gpu.product") == "NVIDIA-L4":
            ops = [{"op": "remove", "path": "/spec/taints"}]
        else:
            continue
        client.request("PATCH", path, body=ops, content_type="application/json-patch+json")
    incident(rehearsal)

    def hotter(dep: dict[str, Any]) -> None:
        args = list(BAD_ARGS)
        args[args.index("--gpu-memory-utilization") + 1] = "0.95"
        dep["spec"]["template"]["spec"]["containers"][0]["args"] = args
    rehearsal.change(hotter, change_cause="--gpu-memory-utilization 0.95 for more KV cache")
    wait_until(lambda: deployment(rehearsal)["metadata"]["annotations"].get(
        "deployment.kubernetes.io/revision") == "16", what="revision 16")
    wait_until(lambda: crash_looping(rehearsal) and all(p["metadata"]["labels"].get("pod-template-hash") ==
               replicaset(rehearsal, 16)["metadata"]["labels"]["pod-template-hash"]
               for p in pods(rehearsal) if not p["metadata"].get("deletionTimestamp")), 60, "revision 16 to crash-loop")
    rehearsal.change(lambda d: d["spec"].update(strategy=dict(DEFAULT)))  # the default, as most Deployments have
    wait_until(lambda: {p["spec"].get("nodeName") for p in live_pods(rehearsal)} == {"gke-l4-pool-1", "gke-l4-pool-2"},
               what="revision 16's pods to hold both L4 GPUs")
    policy = tmp / "l4.yaml"
    policy.write_text(f"extends: {ROOT / 'policies' / 'llama-8b'}\nknown_good: []\ngpu:\n  products: [NVIDIA-L4]\n"
                      "peak_concurrency: 1\n")
    return write_inventory(tmp, policy=str(policy))


def test_the_hand_over_switches_the_surge_off_on_a_full_pool_and_its_rollout_finishes(rehearsal: Rehearsal,
                                                                                      tmp_path: Path) -> None:
    inv = l40s_gone_two_bad_revisions_on_a_full_l4_pool(rehearsal, tmp_path)
    good = replicaset(rehearsal, 14)
    dry, got = dry_then_apply(rehearsal, inv, RESTORE, expect_diffs=2)  # the template's and the strategy's
    shown = host_out(dry.stderr)
    assert dry.returncode == 0, dry.stderr
    assert any(line.startswith("budget handover on deployment llm/llama-8b: revision 14") for line in shown), shown
    for line in ("--- deployment llm/llama-8b strategy (current)", "-    maxSurge: 25%", "+    maxSurge: 0", LINE):
        assert line in shown, (line, shown)
    assert got.returncode == 0, got.stderr
    after = rolled_out(rehearsal)
    assert after["spec"]["strategy"] == SWITCHED
    assert after["metadata"]["annotations"]["kubernetes.io/change-cause"].endswith(
        "; maxSurge 0 / maxUnavailable 1: no free GPU for a surge pod")
    spec = after["spec"]["template"]["spec"]
    assert spec["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-L4"}
    assert spec["containers"][0]["args"] == good["spec"]["template"]["spec"]["containers"][0]["args"]
    assert deployment(rehearsal)["status"].get("readyReplicas") == 2
