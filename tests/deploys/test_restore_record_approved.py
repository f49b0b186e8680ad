"""The crash record writes only what the approved plan showed (hostile 15b F3).

At the prompt a colleague's edit starts a new revision that crash-loops too. The rollback refuses ("what would be
written changed after the plan you approved"); the crash-record operation before it must not write a record on the
new revision's ReplicaSet, which the plan never showed, nor a record with other evidence than shown on the old one —
and the run's last line says "nothing was written" only because nothing was.
"""

from __future__ import annotations

from typing import Any

from fixtures import pyinfra_run
from fixtures.budget_world import prompted_run
from fixtures.pyinfra_run import Rehearsal
from fixtures.restore_world import (
    RESTORE,
    crash_looping,
    deployment,
    host_out,
    incident,
    newest_revision,
    replicaset,
    wait_until,
)
from vllm_remedy.kube.errors import ConflictError

rehearsal = pyinfra_run.rehearsal
CHANGED = "what would be written changed after the plan you approved was made"
CRASHED = "vllm-remedy.io/crashed"


def colleague_env(dep: dict[str, Any]) -> None:
    """``kubectl set env deploy/llama-8b COLLEAGUE_FIX=1``: a new revision that crash-loops as the last did."""
    dep["spec"]["template"]["spec"]["containers"][0].setdefault("env", []).append(
        {"name": "COLLEAGUE_FIX", "value": "1"})


def test_a_new_revision_at_the_prompt_gets_no_record_the_plan_never_showed(rehearsal: Rehearsal) -> None:
    incident(rehearsal)
    bad = newest_revision(rehearsal)
    old_rs = replicaset(rehearsal, bad)["metadata"]["name"]

    def meanwhile() -> None:
        for _ in range(20):
            try:
                rehearsal.change(colleague_env)
                break
            except ConflictError:
                continue
        wait_until(lambda: crash_looping(rehearsal, revision=bad + 1), 60, "the colleague's revision to crash-loop")

    got = prompted_run(rehearsal, RESTORE, meanwhile, timeout=120)
    lines = host_out(got.stderr)
    prompt = host_out(got.stderr.split("Press enter to execute", 1)[0])
    assert f"record on replicaset {old_rs} (revision {bad}) that it was seen dying (2 pod(s) max_len_exceeds_kv)" \
        in prompt, got.stderr
    assert got.returncode != 0, got.stderr
    new_rs = replicaset(rehearsal, bad + 1)["metadata"]["name"]
    # neither the new revision's ReplicaSet (never shown) nor the old one (other evidence than shown) was written
    assert CRASHED not in replicaset(rehearsal, bad + 1)["metadata"]["annotations"], got.stderr
    assert CRASHED not in replicaset(rehearsal, bad)["metadata"]["annotations"], got.stderr
    assert not [line for line in lines if ": written (resourceVersion " in line], got.stderr
    refused = [line for line in lines if line.startswith(f"warning: record on replicaset {new_rs} ")]
    assert len(refused) == 1 and CHANGED in refused[0] and "not recorded" in refused[0], got.stderr
    failed = [line for line in lines if CHANGED in line and not line.startswith("warning: ")]
    assert len(failed) == 1 and "nothing was written" in failed[0], got.stderr
    assert deployment(rehearsal)["spec"]["template"]["spec"]["containers"][0]["env"][-1]["name"] == "COLLEAGUE_FIX"


def test_a_refused_rollback_after_an_approved_record_does_not_say_nothing_was_written(rehearsal: Rehearsal) -> None:
    """The approved record on the dying revision is written; then someone records revision 14 as crashed, so the
    rollback would go elsewhere and refuses — naming the record it did write, not "nothing was written"."""
    incident(rehearsal)
    bad = newest_revision(rehearsal)
    dying = replicaset(rehearsal, bad)["metadata"]["name"]
    target = replicaset(rehearsal, bad - 1)["metadata"]["name"]

    def record_crash_on_the_target() -> None:
        body = {"metadata": {"annotations": {CRASHED: '{"at": "2026-01-01T00:00:00Z", "failure": "cuda_oom"}'}}}
        rehearsal.client().request("PATCH", f"/apis/apps/v1/namespaces/llm/replicasets/{target}", body=body,
                                   content_type="application/merge-patch+json")

    got = prompted_run(rehearsal, RESTORE, record_crash_on_the_target, timeout=120)
    assert got.returncode != 0, got.stderr
    lines = host_out(got.stderr)
    assert any(line.startswith(f"record on replicaset {dying} ") and ": written (resourceVersion " in line
               for line in lines), got.stderr
    assert CRASHED in replicaset(rehearsal, bad)["metadata"]["annotations"]
    failed = [line for line in lines if CHANGED in line]
    assert len(failed) == 1 and "nothing was written" not in failed[0], got.stderr
    assert f"this step wrote nothing (written earlier in this run: replicaset llm/{dying})" in failed[0], got.stderr
