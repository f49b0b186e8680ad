"""The deploys' LeaderWorkerSet waits against an LWS controller older than v0.9.0, through the real pyinfra CLI on the
rehearsal cluster: such a controller writes no ``observedGeneration`` (neither ``status.observedGeneration`` nor a
condition's; both came with kubernetes-sigs/lws #807, v0.9.0), so a wait that asks for one never ends. The waits
finish there, on the ControllerRevision the controller records for the current template and the pods carrying its
hash, and still do not call a rollout done while the controller has not yet synced the new spec."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fixtures import pyinfra_run
from fixtures.lws_remedy import BUDGET, inventory, lines, lwt, serve
from fixtures.lws_world import NAME, RESTORE, read, start_set, vllm_lws
from fixtures.lws_world import inventory as restore_inventory
from fixtures.pyinfra_run import Rehearsal, host_lines

rehearsal = pyinfra_run.rehearsal
WHERE = f"leaderworkerset llm/{NAME}"
OLD = (0, 8)  # the last release before status.observedGeneration


def _unstamped(obj: dict[str, Any]) -> bool:
    """The status as a controller before v0.9.0 leaves it: no observedGeneration anywhere."""
    status = obj.get("status") or {}
    return "observedGeneration" not in status and bool(status.get("conditions")) and all(
        "observedGeneration" not in c for c in status["conditions"])


def test_the_restore_wait_finishes_on_a_controller_before_v0_9(rehearsal: Rehearsal, tmp_path: Path) -> None:
    rehearsal.cluster.leaderworkersets.release = OLD
    good = start_set(rehearsal)  # served, then the bad rollout crash-looping (both waited for by the production wait)
    assert _unstamped(read(rehearsal))
    got = rehearsal.pyinfra(restore_inventory(tmp_path), RESTORE, "-y", timeout=300)
    assert got.returncode == 0, got.stderr
    said = host_lines(got.stderr, f"@k8s/rehearsal/llm/leaderworkerset/{NAME}")
    assert any(line.startswith(f"wait for revision 1 to roll out: leaderworkerset {NAME}: 1 groups of 2 pods ready "
                               "after ") for line in said), said
    after = read(rehearsal)
    assert lwt(after) == lwt(good) and _unstamped(after)


def test_the_budget_wait_is_not_done_before_the_controller_syncs_and_is_after(rehearsal: Rehearsal,
                                                                               tmp_path: Path) -> None:
    """An unpinned, healthy set: the pin's and the budget's writes leave a status that still reads "1 of 1 groups
    updated, 1 ready" and pods that are all Ready. With the controllers paused nothing may call that rolled out:
    the wait times out (3 cluster minutes). Once they run, the rerun's wait (the policy's 15) finishes."""
    rehearsal.cluster.leaderworkersets.release = OLD
    lws = vllm_lws(NAME)
    for key in ("leaderTemplate", "workerTemplate"):
        del lws["spec"]["leaderWorkerTemplate"][key]["spec"]["nodeSelector"]
    serve(rehearsal, lws)
    before = read(rehearsal)
    assert _unstamped(before) and (before["status"]["readyReplicas"], before["status"]["updatedReplicas"]) == (1, 1)
    pin = "gpu:\n  products: [NVIDIA-L40S]\n"
    inv = inventory(tmp_path, pin + "restore:\n  rollout_timeout: 3m\n", name="short")
    rehearsal.cluster.stop()  # the controllers, kubelet included: the status and pods stay as the old spec left them
    try:
        paused = rehearsal.pyinfra(inv, BUDGET, "-y", timeout=300)
        written = read(rehearsal)
    finally:
        rehearsal.cluster.start()
    said = lines(paused)
    assert paused.returncode != 0, paused.stderr
    assert any(line.startswith(f"pin {WHERE}") and ": written (resourceVersion " in line for line in said), said
    assert any(f'timed out waiting for leaderworkerset "{NAME}"' in line for line in said), said
    assert not any(" ready after " in line for line in said), said
    assert written["metadata"]["generation"] > before["metadata"]["generation"]
    assert written["status"] == before["status"]  # nothing synced: the old template's status was there all along

    got = rehearsal.pyinfra(inventory(tmp_path, pin), BUDGET, "-y", timeout=300)
    assert got.returncode == 0, got.stderr
    assert any(f"leaderworkerset {NAME}: 1 groups of 2 pods ready after " in line for line in lines(got)), got.stderr
    after = read(rehearsal)
    assert lwt(after)["leaderTemplate"]["spec"]["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-L40S"}
    assert _unstamped(after) and (after["status"]["readyReplicas"], after["status"]["updatedReplicas"]) == (1, 1)
