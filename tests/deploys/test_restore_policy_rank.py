"""Restore ranks a revision the policy disagrees with below one it allows (hostile 15b F4).

Revision 15 runs the policy's known-good unit (so "pinned in policy") on the 24 GB L4 the policy's
``gpu.products: [NVIDIA-L40S]`` does not allow, predicted at 1.97x against the policy's peak of 8: drift calls it
DRIFTED once restored. Revision 14, one older, is the same unit on L40S. After revision 16 crash-loops, restore must
pick 14 and say why 15 was passed over — in ``--dry``, at the prompt and with ``-y`` alike.
"""

from __future__ import annotations

from typing import Any

from fixtures import pyinfra_run
from fixtures.dry_run import dry_then_apply
from fixtures.pyinfra_run import Rehearsal
from fixtures.restore_world import (
    L4_TOLERATION,
    LOCAL,
    RESTORE,
    bad_revision,
    crash_looping,
    deployment,
    host_out,
    newest_revision,
    replicaset,
    vllm_runtime,
    wait_until,
)
from vllm_remedy.kube.history import templates_equal

rehearsal = pyinfra_run.rehearsal


def on_l4(dep: dict[str, Any]) -> None:
    """The same unit moved to the L4 pool (as the report's revision 24)."""
    spec = dep["spec"]["template"]["spec"]
    spec["nodeSelector"] = {"cloud.google.com/gke-accelerator": "nvidia-l4"}
    spec["tolerations"] = [dict(L4_TOLERATION)]


def rolled_out(rehearsal: Rehearsal) -> bool:
    dep = deployment(rehearsal)
    status, want = dep.get("status") or {}, dep["spec"].get("replicas", 1)
    return (status.get("observedGeneration") == dep["metadata"]["generation"]
            and status.get("updatedReplicas") == want and status.get("readyReplicas") == want
            and status.get("replicas") == want)


def test_a_unit_on_a_gpu_the_policy_forbids_ranks_below_the_same_unit_on_the_allowed_one(rehearsal: Rehearsal
                                                                                        ) -> None:
    vllm_runtime(rehearsal)
    allowed = newest_revision(rehearsal)
    rehearsal.change(on_l4, change_cause="move to the L4 pool")
    wait_until(lambda: rolled_out(rehearsal), 60, "the L4 revision to roll out")
    forbidden = allowed + 1
    rehearsal.change(bad_revision, change_cause="drop --max-model-len")
    wait_until(lambda: crash_looping(rehearsal, revision=forbidden + 1), 60, "the bad revision to crash-loop")
    good = replicaset(rehearsal, allowed)
    on_l4_rs = replicaset(rehearsal, forbidden)["metadata"]["name"]
    dry, run = dry_then_apply(rehearsal, LOCAL, RESTORE, expect_diffs=1)
    assert run.returncode == 0, run.stderr
    for got in (dry, run):
        lines = host_out(got.stderr)
        passed = [line for line in lines if line.startswith(f"skipped revision {forbidden} ({on_l4_rs}): ranked below "
                                                            "the revisions the policy allows (pinned in policy): ")]
        assert len(passed) == 1, got.stderr
        assert "pinned to nvidia-l4, policy allows NVIDIA-L40S" in passed[0], passed
        assert "is below the policy's peak 8" in passed[0], passed
        assert any(line.startswith(f"roll back deployment llm/llama-8b from revision {forbidden + 1} to revision "
                                   f"{allowed} ({good['metadata']['name']}) — chosen by rule: pinned in policy")
                   for line in lines), got.stderr
    assert templates_equal(deployment(rehearsal)["spec"]["template"], good["spec"]["template"])
