"""restore counts the GPUs its target's pods can get before it writes (hostile15b F2, hostile16 G7), through the real
pyinfra CLI on the rehearsal cluster: ``--dry``, the prompt and ``-y``.

The incident (revision 15 on the L4 pool, crash-looping) while another Deployment holds two of the three L40S: the
rollback to revision 14 (two L40S pods) has room for one. Before, ``--dry`` said "fits", ``-y`` wrote and failed its
wait with a pod Unschedulable, and a rerun exited 0 ("nothing to restore"). Now every run refuses before writing,
exit 1, saying how many fit; ``--data override=capacity`` writes anyway, and the rerun after that stuck rollback
says it is stuck, exit 1.
"""

from __future__ import annotations

from typing import Any

from fixtures import pyinfra_run
from fixtures.drift_world import add_vllm_deployment
from fixtures.pyinfra_run import Rehearsal
from fixtures.restore_world import (
    LOCAL,
    RESTORE,
    crash_looping,
    deployment,
    host_out,
    incident,
    replicaset,
    wait_until,
)
from vllm_remedy.kube.history import templates_equal

rehearsal = pyinfra_run.rehearsal


def two_l40s_taken(rehearsal: Rehearsal) -> None:
    """The incident, and a second Deployment (llama-8b's seed spec, its own labels) whose two pods take two of the
    three L40S once the incident's revision moved llama-8b to the L4 pool."""
    add_vllm_deployment(rehearsal, "filler")
    client = rehearsal.client()
    rehearsal.change(lambda dep: dep["spec"].update(replicas=2), name="filler")
    incident(rehearsal)  # revision 15 crash-loops on L4; revision 14 wants two L40S
    wait_until(lambda: sum(bool(p["spec"].get("nodeName")) for p in client.list_pods("llm", "app=filler")) == 2, 60,
               "the filler's two pods to be bound")


def test_a_rollback_with_room_for_one_of_two_pods_is_refused_before_any_write(rehearsal: Rehearsal) -> None:
    two_l40s_taken(rehearsal)
    before = deployment(rehearsal)
    refusal = ("refused: roll back deployment llm/llama-8b to revision 14: only 1 of 2 pod(s) of revision 14 fit on "
               "the nodes its pods may use now (free GPUs and those this workload's pods hold): the rollback could "
               "not finish and would leave 1 pod(s) Pending; free GPUs, or restore anyway with --data "
               "override=capacity")
    for args, stdin in ((("--dry",), ""), (("-y",), ""), ((), "\n")):
        run = rehearsal.pyinfra(LOCAL, RESTORE, *args, stdin=stdin)
        assert run.returncode == 1, (args, run.stderr)
        assert refusal in host_out(run.stderr), (args, run.stderr)
        assert not any(line.startswith("prediction on") for line in host_out(run.stderr)), run.stderr
    assert deployment(rehearsal)["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"] or \
        templates_equal(deployment(rehearsal)["spec"]["template"], before["spec"]["template"])


def test_a_forced_rollback_left_stuck_is_not_a_success_on_the_rerun(rehearsal: Rehearsal) -> None:
    two_l40s_taken(rehearsal)
    good = replicaset(rehearsal, 14)["spec"]["template"]
    run = rehearsal.pyinfra(LOCAL, RESTORE, "-y", "--data", "override=capacity", timeout=300)
    lines = host_out(run.stderr)
    assert any(line.startswith("warning: restored despite capacity (override=capacity): only 1 of 2 pod(s)")
               for line in lines), run.stderr
    assert templates_equal(deployment(rehearsal)["spec"]["template"], good)
    assert run.returncode == 1, run.stderr  # its wait: a pod Unschedulable
    again = rehearsal.pyinfra(LOCAL, RESTORE, "--dry")
    assert again.returncode == 1, again.stderr
    assert any(line.startswith("refused: the rollback to revision 16 restore wrote (at ") and
               "is stuck: 1 new pod(s) cannot be scheduled" in line for line in host_out(again.stderr)), again.stderr


DYING = ["meta-llama/Llama-3.1-8B-Instruct", "--max-model-len", "8192", "--gpu-memory-utilization", "0.30",
         "--max-num-seqs", "64"]


def test_gpus_a_recreate_rollback_frees_to_a_pending_rival_are_not_counted(rehearsal: Rehearsal) -> None:
    """llama-8b (Recreate) crash-loops on two L40S; another Deployment holds the third and waits with a second pod
    Pending. The rollback frees two L40S, but the rival is ahead in the scheduler's queue: room for one."""
    client = rehearsal.client()
    add_vllm_deployment(rehearsal, "pinme")
    rehearsal.change(lambda dep: dep["spec"].update(replicas=1), name="pinme")
    wait_until(lambda: sum(bool(p["spec"].get("nodeName")) for p in client.list_pods("llm", "app=pinme")) == 1, 60,
               "pinme's pod to be bound")

    def dying(dep: dict[str, Any]) -> None:
        dep["spec"]["template"]["spec"]["containers"][0]["args"] = list(DYING)
        dep["spec"]["strategy"] = {"type": "Recreate"}
    rehearsal.change(dying, change_cause="utilization 0.30; Recreate")
    wait_until(lambda: crash_looping(rehearsal, 2, 15), 120, "revision 15 to crash-loop on two L40S")
    rehearsal.change(lambda dep: dep["spec"].update(replicas=2), name="pinme")
    wait_until(lambda: sum(not p["spec"].get("nodeName") for p in client.list_pods("llm", "app=pinme")) == 1, 60,
               "pinme's second pod to wait for a GPU")
    (rival,) = [p["metadata"]["name"] for p in client.list_pods("llm", "app=pinme") if not p["spec"].get("nodeName")]
    run = rehearsal.pyinfra(LOCAL, RESTORE, "--dry")
    assert run.returncode == 1, run.stderr
    assert ("refused: roll back deployment llm/llama-8b to revision 14: only 1 of 2 pod(s) of revision 14 fit on the "
            "nodes its pods may use now (free GPUs and those this workload's pods hold; Recreate stops every old pod "
            f"first, and 1 Pending GPU pod(s) of other workloads (llm/{rival}) may take the GPUs it frees): the "
            "rollback could not finish and would leave 1 pod(s) Pending; free GPUs, or restore anyway with --data "
            "override=capacity") in host_out(run.stderr), run.stderr
