"""deploys/budget.py (runbook step 4) on the StatefulSet llama-sts, through the real pyinfra CLI on the rehearsal
cluster: the Deployment's promises (tests/deploys/test_budget.py) kept for the other kind vLLM is run as."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fixtures import pyinfra_run
from fixtures.budget_world import BUDGET, L40S_KV, MODEL, prompted_run
from fixtures.pyinfra_run import Rehearsal, detected_changes, host_lines
from fixtures.sts_step4 import (
    CHANGE_ID,
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
    rolled_out,
    scenario,
    their_edit_stands,
    with_args,
)
from fixtures.sts_world import STS_HOST, llama_set, sts

rehearsal = pyinfra_run.rehearsal
SUMMARY = "budget statefulset llm/llama-sts: --max-model-len 16384 (max-model-len, rung 1 of 1)"


def test_dry_is_the_run_and_a_rerun_changes_nothing(rehearsal: Rehearsal, tmp_path: Path) -> None:
    scenario(rehearsal, with_args(IMPLICIT))
    inv = inventory(tmp_path)
    dry, got = dry_is_the_run(rehearsal, inv, BUDGET, expect_diffs=1)
    assert got.returncode == 0, got.stderr
    shown = host_lines(dry.stderr, STS_HOST)
    assert shown.count(L40S_KV) == 1, shown  # the prediction line, as for a Deployment
    assert "+    - --max-model-len" in shown and "+    - '16384'" in shown, shown
    lines = host_lines(got.stderr, STS_HOST)
    assert any(line.startswith(SUMMARY + ": written (resourceVersion ") for line in lines), lines
    assert any(line.startswith("wait for statefulset llm/llama-sts to roll out: ") and "after" in line
               for line in lines), lines
    after = rolled_out(rehearsal)
    assert after["spec"]["template"]["spec"]["containers"][0]["args"] == [*IMPLICIT, "--max-model-len", "16384"]
    assert after["metadata"]["annotations"]["vllm-remedy.io/last-action"] == "budget"
    no_changes(rehearsal, inv, BUDGET, 5)


def test_the_runbooks_crash_looping_set_ends_with_ready_pods(rehearsal: Rehearsal, tmp_path: Path) -> None:
    """Game day 11's bad rollout (--max-model-len dropped, moved to L4s): the pin to L40S and the explicit
    --max-model-len, planned one on the other as -y makes them; the crash-looping pod OrderedReady waits on is
    deleted (policy restore.delete_pods: blocking) and both replicas end Ready on L40S."""
    crash_loop(rehearsal)
    inv = inventory(tmp_path)
    dry, got = dry_is_the_run(rehearsal, inv, BUDGET, expect_diffs=2)
    assert got.returncode == 0, got.stderr
    shown = host_lines(dry.stderr, STS_HOST)
    assert ("then: podManagementPolicy OrderedReady: pods llama-sts-1 crash-loop and block the rollout until "
            "deleted; such pods are deleted (policy restore.delete_pods: blocking)") in shown, shown
    lines = host_lines(got.stderr, STS_HOST)
    assert any("deleted pod llama-sts-1 (policy restore.delete_pods: blocking)" in line for line in lines), lines
    after = rolled_out(rehearsal)
    spec = after["spec"]["template"]["spec"]
    assert spec["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-L40S"}
    assert spec["containers"][0]["args"] == [*IMPLICIT, "--max-model-len", "16384"]
    assert all(p["spec"]["nodeName"].startswith("gpu-l40s-") for p in live(rehearsal))
    no_changes(rehearsal, inv, BUDGET, 5)


def test_nothing_predicted_to_fit_is_refused_and_nothing_changes(rehearsal: Rehearsal, tmp_path: Path) -> None:
    scenario(rehearsal, on_l4([MODEL, "--max-model-len", "4096", "--gpu-memory-utilization", "0.90",
                               "--max-num-seqs", "64"]))
    before = sts(rehearsal)
    inv = inventory(tmp_path, "gpu: {products: [NVIDIA-L4], label: cloud.google.com/gke-accelerator}\n"
                              "flags:\n  max-model-len: {min: 16384, max: 16384, preferred: 16384}\n"
                              "  tensor-parallel-size: {min: 1, max: 1}\nenforce_eager: {allowed: false}\n"
                              "load_shedding: {max_model_len: 16384}\n")
    got = rehearsal.pyinfra(inv, BUDGET, "-y")
    assert got.returncode == 1, got.stderr
    refused = [line for line in host_lines(got.stderr, STS_HOST) if "no change within policy" in line]
    assert len(refused) == 1, got.stderr
    assert refused[0].startswith("refused: "), refused  # as --dry prints it
    refused = [line.removeprefix("refused: ") for line in refused]
    assert refused[0].startswith("statefulset llm/llama-sts: predicted max concurrency 7.87x is below the required "
                                 "10.00x at max-model-len 4,096; max-model-len 4096 is below the policy minimum "
                                 "16384; no change within policy "), refused
    assert refused[0].endswith("is predicted to fit (prediction on NVIDIA-L4: fits — KV cache 32,240 tokens, "
                               "maximum concurrency 7.87x at max-model-len 4096)"), refused
    after = sts(rehearsal)
    assert (after["spec"], after["metadata"]["generation"]) == (before["spec"], before["metadata"]["generation"])


def test_with_y_a_concurrent_edit_is_refused_and_kept(rehearsal: Rehearsal, tmp_path: Path) -> None:
    scenario(rehearsal, with_args(IMPLICIT))
    got = edited_between_read_and_write(rehearsal, inventory(tmp_path), BUDGET, tmp_path)
    their_edit_stands(rehearsal, got)
    assert sts(rehearsal)["spec"]["template"]["spec"]["containers"][0]["args"] == IMPLICIT


def test_an_edit_at_the_prompt_is_refused_and_kept(rehearsal: Rehearsal, tmp_path: Path) -> None:
    scenario(rehearsal, with_args(IMPLICIT))
    got = prompted_run(rehearsal, BUDGET, lambda: edit(rehearsal, env_fix), timeout=120,
                       inventory=inventory(tmp_path))
    their_edit_stands(rehearsal, got)
    assert CHANGE_ID not in (sts(rehearsal)["metadata"].get("annotations") or {})


def test_a_helm_managed_set_is_refused_under_gitops_refuse_in_dry_as_with_y(rehearsal: Rehearsal,
                                                                            tmp_path: Path) -> None:
    """The owner gate is the Deployment's: a Helm release's set is not edited under policy gitops: refuse; --dry
    shows the refusal once, counts no change for it and exits 1, as -y does; nothing is written."""
    def helm(obj: dict[str, Any]) -> None:
        with_args(IMPLICIT)(obj)
        obj["metadata"].setdefault("labels", {})["app.kubernetes.io/managed-by"] = "Helm"
        obj["metadata"].setdefault("annotations", {})["meta.helm.sh/release-name"] = "vllm"

    llama_set(rehearsal)
    edit(rehearsal, helm)
    before = rolled_out(rehearsal)
    inv = inventory(tmp_path, "gitops: refuse\n")
    for mode in ("--dry", "-y"):
        got = rehearsal.pyinfra(inv, BUDGET, mode, timeout=300)
        assert got.returncode == 1, got.stderr
        lines = host_lines(got.stderr, STS_HOST)
        refused = [line for line in lines if line.startswith("refused: ") and "policy gitops is refuse" in line]
        assert len(refused) == 1, lines
        assert any(line.startswith("helm: ") for line in lines), lines
        if mode == "--dry":  # no change counted for the refused write
            fix = [cells for name, cells in detected_changes(got.stderr).items() if name.startswith("Smallest")]
            assert fix and all(cells[0] == "-" for cells in fix), got.stderr
    after = sts(rehearsal)
    assert (after["spec"], after["metadata"]["generation"]) == (before["spec"], before["metadata"]["generation"])
