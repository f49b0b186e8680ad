"""deploys/budget.py (runbook step 4) through the real pyinfra CLI against the rehearsal cluster."""

from __future__ import annotations

from typing import Any

from fixtures import pyinfra_run
from fixtures.budget_world import (
    BUDGET,
    L40S_KV,
    LOCAL,
    MODEL,
    NAME,
    NS,
    args_of,
    assert_no_changes,
    deployment,
    kv_logged,
    live_pods,
    policy_file,
    prompted_run,
    scenario,
    with_args,
)
from fixtures.dry_run import diffs, dry_then_apply
from fixtures.pyinfra_run import Rehearsal
from fixtures.restore_world import L4_TOLERATION, host_out, incident, write_inventory

rehearsal = pyinfra_run.rehearsal
exact_rehearsal = pyinfra_run.exact_rehearsal  # vLLM's log compared with the prediction exactly

IMPLICIT = [MODEL, "--gpu-memory-utilization", "0.90", "--max-num-seqs", "64"]
REASON = ("max-model-len: set max-model-len explicitly to 16,384 (never the model's default); max concurrency "
          "12.08x ≥ 10.00x needed; nothing else changes")


def implicit_len(rehearsal: Rehearsal) -> dict[str, Any]:
    """Revision 4: --max-model-len dropped (the model's 131072): it starts on L40S but holds 1.51 requests."""
    return scenario(rehearsal, with_args(IMPLICIT), "drop --max-model-len")


def test_budget_makes_max_model_len_explicit_and_pods_start_with_the_predicted_kv(exact_rehearsal: Rehearsal) -> None:
    rehearsal = exact_rehearsal
    implicit_len(rehearsal)
    _dry, got = dry_then_apply(rehearsal, LOCAL, BUDGET, expect_diffs=1)
    assert got.returncode == 0, got.stderr
    lines = host_out(got.stderr)
    summary = "budget deployment llm/llama-8b: --max-model-len 16384 (max-model-len, rung 1 of 1)"
    assert any(line.startswith(summary + ": written (resourceVersion ") for line in lines), lines
    assert any(line.startswith('wait for deployment llm/llama-8b to roll out: deployment "llama-8b" successfully '
                               "rolled out after ") for line in lines), lines
    after = deployment(rehearsal)
    assert args_of(after) == [*IMPLICIT, "--max-model-len", "16384"]
    notes = after["metadata"]["annotations"]
    assert notes["kubernetes.io/change-cause"] == f"vllm-remedy budget: {REASON}"
    assert notes["vllm-remedy.io/last-action"] == "budget"
    assert notes["vllm-remedy.io/last-action-reason"] == REASON
    assert after["spec"]["template"]["spec"]["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-L40S"}
    live = live_pods(rehearsal)
    assert len(live) == 2 and all(p["spec"]["nodeName"].startswith("gpu-l40s-") for p in live)
    assert set(kv_logged(rehearsal).values()) == {197840}  # the prediction's KV tokens, in vLLM's own log


def test_second_run_changes_nothing(rehearsal: Rehearsal) -> None:
    implicit_len(rehearsal)
    first = rehearsal.pyinfra(LOCAL, BUDGET, "-y")
    assert first.returncode == 0, first.stderr
    assert_no_changes(rehearsal, BUDGET, 5)


def test_dry_prints_the_diff_and_prediction_once_and_changes_nothing(rehearsal: Rehearsal) -> None:
    before = implicit_len(rehearsal)
    got = rehearsal.pyinfra(LOCAL, BUDGET, "--dry")
    assert got.returncode == 0, got.stderr
    lines = host_out(got.stderr)
    assert lines.count(L40S_KV) == 1, lines
    assert lines.count("problem: predicted max concurrency 1.51x is below the required 10.00x at max-model-len "
                       "131,072; max-model-len is implicit (131,072 from the model): set it explicitly") == 1
    assert "--- deployment llm/llama-8b template (current)" in lines
    assert "+    - --max-model-len" in lines and "+    - '16384'" in lines
    assert deployment(rehearsal)["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


def test_refuses_when_nothing_within_policy_is_predicted_to_fit(rehearsal: Rehearsal) -> None:
    def on_l4(dep: dict[str, Any]) -> None:
        spec = dep["spec"]["template"]["spec"]
        spec["containers"][0]["args"] = [MODEL, "--max-model-len", "4096", "--gpu-memory-utilization", "0.90",
                                         "--max-num-seqs", "64"]
        spec["nodeSelector"] = {"cloud.google.com/gke-accelerator": "nvidia-l4"}
        spec["tolerations"] = [dict(L4_TOLERATION)]

    before = scenario(rehearsal, on_l4, "move to the L4 pool at 4096")
    policy = policy_file(rehearsal.tmp, "gpu: {products: [NVIDIA-L4], label: cloud.google.com/gke-accelerator}\n"
                                        "flags:\n  max-model-len: {min: 16384, max: 16384, preferred: 16384}\n"
                                        "  tensor-parallel-size: {min: 1, max: 1}\nenforce_eager: {allowed: false}\n"
                                        "load_shedding: {max_model_len: 16384}\n")
    inv = write_inventory(rehearsal.tmp, policy=policy)
    got = rehearsal.pyinfra(inv, BUDGET, "-y")
    assert got.returncode == 1, got.stderr
    refused = [line for line in host_out(got.stderr) if "no change within policy" in line]
    assert len(refused) == 1, host_out(got.stderr)
    assert refused[0].startswith("refused: "), refused  # as --dry prints it
    refused = [line.removeprefix("refused: ") for line in refused]
    assert refused[0] == ("deployment llm/llama-8b: predicted max concurrency 7.87x is below the required 10.00x at "
                          "max-model-len 4,096; max-model-len 4096 is below the policy minimum 16384; no change within "
                          f"policy {policy} is predicted to fit (prediction on NVIDIA-L4: fits — KV cache 32,240 "
                          "tokens, maximum concurrency 7.87x at max-model-len 4096)")
    after = deployment(rehearsal)
    assert after["metadata"]["generation"] == before["metadata"]["generation"]
    assert args_of(after) == args_of(before)


def test_a_concurrent_edit_is_never_overwritten(rehearsal: Rehearsal) -> None:
    implicit_len(rehearsal)

    def someone_else() -> None:
        rehearsal.change(lambda d: d["metadata"]["annotations"].update({"team": "edited meanwhile"}))

    got = prompted_run(rehearsal, BUDGET, someone_else)
    assert got.returncode == 1, got.stderr
    failed = [line for line in host_out(got.stderr) if "changed since it was read" in line]
    assert len(failed) == 1, host_out(got.stderr)
    assert failed[0].startswith("budget deployment llm/llama-8b: --max-model-len 16384 (max-model-len, rung 1 of "
                                "1): ")
    after = deployment(rehearsal)
    assert args_of(after) == IMPLICIT  # our change was not written over theirs
    assert after["metadata"]["annotations"]["team"] == "edited meanwhile"
    assert "vllm-remedy.io/last-action" not in after["metadata"]["annotations"]
    assert NS == "llm" and NAME == "llama-8b"


def test_a_crash_on_another_card_is_not_held_against_the_pinned_one(rehearsal: Rehearsal) -> None:
    """The runbook's revision 15 crash-loops on L4s; budget plans for the policy's L40S, where the model
    predicts the start fits: the L4's max_len_exceeds_kv is no evidence the model is wrong about the L40S."""
    incident(rehearsal)
    # two writes of the pod template: the pin, then the smallest fix planned on the pinned template (what -y sees)
    dry, got = dry_then_apply(rehearsal, LOCAL, BUDGET, expect_diffs=2)
    assert got.returncode == 0, got.stderr
    lines = host_out(dry.stderr)
    assert not [line for line in lines if "observed max_len_exceeds_kv" in line], lines
    assert any("nvidia.com/gpu.product: NVIDIA-L40S" in line for line in lines), lines  # the pin is planned
    second = diffs(dry.stderr)[1].lines
    assert "+    - --max-model-len" in second and not [line for line in second if "nodeSelector" in line], second
