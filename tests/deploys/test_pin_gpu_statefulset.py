"""deploys/pin_gpu.py on the StatefulSet llama-sts, through the real pyinfra CLI on the rehearsal cluster: the
Deployment's promises (tests/deploys/test_pin_gpu.py) kept, and no maxSurge/maxUnavailable switch for a kind that
deletes each pod before creating its successor."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fixtures import pyinfra_run
from fixtures.budget_world import GOOD_ARGS, L40S_KV, PIN, prompted_run
from fixtures.pyinfra_run import Rehearsal, host_lines
from fixtures.sts_step4 import (
    IMPLICIT,
    crash_loop,
    dry_is_the_run,
    edit,
    edited_between_read_and_write,
    env_fix,
    inventory,
    live,
    no_changes,
    on_l4,
    quiet,
    rolled_out,
    scenario,
    their_edit_stands,
)
from fixtures.sts_world import STS_HOST, llama_set, sts

rehearsal = pyinfra_run.rehearsal
SUMMARY = "pin statefulset llm/llama-sts to nvidia.com/gpu.product=NVIDIA-L40S with 1 GPU(s) per pod"


def three_on_karpenter_label(obj: dict[str, Any]) -> None:
    obj["spec"]["replicas"] = 3
    obj["spec"]["template"]["spec"]["nodeSelector"] = {"karpenter.k8s.aws/instance-gpu-name": "l40s"}


def test_on_full_nodes_dry_is_the_run_without_a_strategy_change_and_a_rerun_changes_nothing(
        rehearsal: Rehearsal, tmp_path: Path) -> None:
    """Every L40S GPU held by the set's own three pods: a Deployment would switch to maxSurge 0 here
    (test_pin_gpu.py); a StatefulSet deletes each pod before creating its successor, so only the template changes,
    nothing says otherwise, and all three pods end Ready on the pinned label."""
    llama_set(rehearsal)
    edit(rehearsal, three_on_karpenter_label)
    before = rolled_out(rehearsal, replicas=3)
    quiet(rehearsal)
    inv = inventory(tmp_path)
    dry, got = dry_is_the_run(rehearsal, inv, PIN, expect_diffs=1)
    assert got.returncode == 0, got.stderr
    shown = host_lines(dry.stderr, STS_HOST)
    assert shown.count(L40S_KV) == 1, shown
    for change in ("-    karpenter.k8s.aws/instance-gpu-name: l40s", "+    nvidia.com/gpu.product: NVIDIA-L40S"):
        assert change in shown, (change, shown)
    assert not [line for line in shown if "maxSurge" in line or "strategy (current)" in line], shown
    assert any(line.startswith(SUMMARY + ": written") for line in host_lines(got.stderr, STS_HOST)), got.stderr
    after = rolled_out(rehearsal, replicas=3)
    assert after["spec"]["template"]["spec"]["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-L40S"}
    assert after["spec"]["template"]["spec"]["containers"][0]["args"] == GOOD_ARGS
    assert after["spec"].get("updateStrategy") == before["spec"].get("updateStrategy")
    assert "strategy" not in after["spec"]
    assert after["metadata"]["annotations"]["vllm-remedy.io/last-action-reason"] == (
        "pin nvidia.com/gpu.product=NVIDIA-L40S, 1 GPU(s) per pod")
    assert len(live(rehearsal)) == 3 and all(p["spec"]["nodeName"].startswith("gpu-l40s-") for p in live(rehearsal))
    no_changes(rehearsal, inv, PIN, 4)


def test_a_pin_predicted_not_to_start_is_refused_and_nothing_changes(rehearsal: Rehearsal, tmp_path: Path) -> None:
    """The crash-looping set pinned to the L4 it crashes on, with the model's 131072 tokens: refused by name."""
    before = crash_loop(rehearsal)
    got = rehearsal.pyinfra(inventory(tmp_path), PIN, "-y", "--data", "gpu_product=NVIDIA-L4")
    assert got.returncode == 1, got.stderr
    refused = [line for line in host_lines(got.stderr, STS_HOST)
               if line.startswith("refused: pin statefulset llm/llama-sts to NVIDIA-L4: ")]
    assert len(refused) == 1 and "predicted" in refused[0], got.stderr
    after = sts(rehearsal)
    assert (after["spec"], after["metadata"]["generation"]) == (before["spec"], before["metadata"]["generation"])
    assert after["spec"]["template"]["spec"]["containers"][0]["args"] == IMPLICIT


def test_with_y_a_concurrent_edit_is_refused_and_kept(rehearsal: Rehearsal, tmp_path: Path) -> None:
    scenario(rehearsal, on_l4())
    got = edited_between_read_and_write(rehearsal, inventory(tmp_path), PIN, tmp_path)
    their_edit_stands(rehearsal, got)
    assert "nvidia.com/gpu.product" not in sts(rehearsal)["spec"]["template"]["spec"]["nodeSelector"]


def test_an_edit_at_the_prompt_is_refused_and_kept(rehearsal: Rehearsal, tmp_path: Path) -> None:
    scenario(rehearsal, on_l4())
    got = prompted_run(rehearsal, PIN, lambda: edit(rehearsal, env_fix), timeout=120, inventory=inventory(tmp_path))
    their_edit_stands(rehearsal, got)
