"""deploys/restore.py and deploys/pin_gpu.py on a LeaderWorkerSet keep the timed toggle's promise, through the real
pyinfra CLI on the rehearsal cluster: any later run reverts an expired --enforce-eager, --dry showing exactly the
writes -y makes (its diffs applied in order give the set after -y); a rollback to a template without the flag drops
the toggle's record in the same write; a rerun after kill -9 mid-wait waits for the rollout still under way."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from fixtures import pyinfra_run
from fixtures.budget_world import prompted_run
from fixtures.lws_remedy import EAGER, EXPIRES, LOAD_GUARD, PRIOR, dry_then_apply, edits, inventory, lines, lwt, serve
from fixtures.lws_remedy import rolled_out as lws_rolled_out
from fixtures.lws_world import ARGS, BAD_ARGS, GOOD_ARGS, NAME, RESTORE, patch, read, start_set, vllm_lws
from fixtures.pyinfra_run import ROOT, Rehearsal
from fixtures.restore_world import killed_once
from vllm_remedy.kube.annotations import parse_rfc3339
from vllm_remedy.kube.lws_wait import wait_for_lws_rollout

rehearsal = pyinfra_run.rehearsal
WHERE = f"leaderworkerset llm/{NAME}"
PIN = str(ROOT / "deploys" / "pin_gpu.py")


def _args(obj: dict[str, Any]) -> list[str]:
    return list(lwt(obj)["leaderTemplate"]["spec"]["containers"][0]["args"])


def _toggled(rehearsal: Rehearsal, inv: str, ttl: str) -> dict[str, Any]:
    """--enforce-eager on for ``ttl`` through deploys/enforce_eager.py, rolled out; the set then."""
    got = rehearsal.pyinfra(inv, EAGER, "-y", "--data", f"eager_ttl={ttl}", timeout=300)
    assert got.returncode == 0, got.stderr
    on = lws_rolled_out(rehearsal)
    assert _args(on) == [*GOOD_ARGS, "--enforce-eager"] and EXPIRES in on["metadata"]["annotations"]
    return on


def _expire(rehearsal: Rehearsal, on: dict[str, Any]) -> None:
    client = rehearsal.client()
    while client.server_time() < parse_rfc3339(on["metadata"]["annotations"][EXPIRES]):
        time.sleep(0.05)  # the rehearsal clock runs 600x: a cluster minute is 0.1 s


def _bad_rollout(rehearsal: Rehearsal) -> None:
    """The runbook's bad rollout over the toggled revision (its args replaced: no --enforce-eager), crash-looping."""
    patch(rehearsal, [{"op": "replace", "path": ARGS, "value": BAD_ARGS}])
    failed = wait_for_lws_rollout(rehearsal.client(), "llm", NAME, timeout=1800, clock=rehearsal.cluster.clock,
                                  interval=5, fetch_log=False)
    assert failed.outcome == "crash-loop", failed.message


def _settled_rerun_changes_nothing(rehearsal: Rehearsal, inv: str) -> None:
    after = lws_rolled_out(rehearsal)
    again = rehearsal.pyinfra(inv, LOAD_GUARD, "-y", timeout=300)
    assert again.returncode == 0 and "noop: no temporary toggle has expired" in lines(again), again.stderr
    assert edits(read(rehearsal)) == edits(after), again.stderr


def test_restore_reverts_an_expired_toggle_after_the_rollback_as_dry_showed(rehearsal: Rehearsal,
                                                                            tmp_path: Path) -> None:
    """The newest good revision is the toggled one: rolled back to, then its expired toggle comes off — two writes,
    --dry planning the revert on the restored template."""
    serve(rehearsal)
    inv = inventory(tmp_path)
    _expire(rehearsal, _toggled(rehearsal, inv, "1m"))
    _bad_rollout(rehearsal)
    dry, got = dry_then_apply(rehearsal, inv, RESTORE, expect_diffs=2)
    assert got.returncode == 0, got.stderr
    assert any(line.startswith(f"revert expired toggles on {WHERE}: enforce-eager: restore the exact argv from "
                               "before --enforce-eager") for line in lines(dry)), lines(dry)
    after = lws_rolled_out(rehearsal)
    assert _args(after) == GOOD_ARGS
    notes = after["metadata"]["annotations"]
    assert EXPIRES not in notes and PRIOR not in notes and notes["vllm-remedy.io/last-action"] == "expire"
    _settled_rerun_changes_nothing(rehearsal, inv)


def test_a_rollback_past_the_toggle_drops_its_record_in_the_same_write(rehearsal: Rehearsal, tmp_path: Path) -> None:
    """The operator's revision 1 predates the toggle (2h, not expired): its record goes with the rollback's write."""
    serve(rehearsal)
    inv = inventory(tmp_path)
    _toggled(rehearsal, inv, "2h")
    _bad_rollout(rehearsal)
    _dry, got = dry_then_apply(rehearsal, inv, RESTORE, "--data", "revision=1", expect_diffs=1)
    assert got.returncode == 0, got.stderr
    after = lws_rolled_out(rehearsal)
    assert _args(after) == GOOD_ARGS
    notes = after["metadata"]["annotations"]
    assert EXPIRES not in notes and PRIOR not in notes and notes["vllm-remedy.io/last-action"] == "restore", notes
    _settled_rerun_changes_nothing(rehearsal, inv)


def test_pin_reverts_an_expired_toggle_planned_on_the_pinned_set(rehearsal: Rehearsal, tmp_path: Path) -> None:
    """An unpinned set with an expired toggle: the pin, then the revert on the pinned template — what --dry showed."""
    lws = vllm_lws(NAME)
    for key in ("leaderTemplate", "workerTemplate"):
        del lws["spec"]["leaderWorkerTemplate"][key]["spec"]["nodeSelector"]
    serve(rehearsal, lws)
    inv = inventory(tmp_path)
    _expire(rehearsal, _toggled(rehearsal, inv, "1m"))
    _dry, got = dry_then_apply(rehearsal, inv, PIN, "--data", "gpu_product=NVIDIA-L40S", expect_diffs=2)
    assert got.returncode == 0, got.stderr
    after = lws_rolled_out(rehearsal)
    assert _args(after) == GOOD_ARGS
    for key in ("leaderTemplate", "workerTemplate"):
        assert lwt(after)[key]["spec"]["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-L40S"}, key
    notes = after["metadata"]["annotations"]
    assert EXPIRES not in notes and PRIOR not in notes
    assert (after["status"]["readyReplicas"], after["status"]["updatedReplicas"]) == (1, 1)


def test_after_kill_9_mid_wait_a_rerun_waits_for_the_rollback_to_be_ready(rehearsal: Rehearsal,
                                                                           tmp_path: Path) -> None:
    start_set(rehearsal)
    inv = inventory(tmp_path)
    clock = rehearsal.cluster.clock
    clock.set_speed(5.0)  # the restored group takes real seconds to load: long enough to kill the run mid-wait
    said = killed_once(rehearsal, inv, RESTORE, tmp_path, "crash-loop: written (resourceVersion",
                       "the run to write the rollback")
    written = read(rehearsal)
    assert _args(written) == GOOD_ARGS, said
    assert int(written["status"].get("readyReplicas") or 0) < 1, written["status"]  # killed before Ready

    def faster() -> None:
        clock.set_speed(60.0)

    again = prompted_run(rehearsal, RESTORE, faster, timeout=180, inventory=inv)  # the rerun, at the prompt
    assert again.returncode == 0, again.stderr
    said = lines(again)
    resumed = [line for line in said if line.startswith(f"wait for {WHERE} to roll out (last vllm-remedy write: "
                                                        "restore at ")]
    assert len(resumed) == 1 and "ready after" in resumed[0], said
    after = read(rehearsal)
    assert after["metadata"]["generation"] == written["metadata"]["generation"]  # waited for, not written again
    assert (after["status"]["readyReplicas"], after["status"]["updatedReplicas"]) == (1, 1)
