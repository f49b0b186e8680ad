"""deploys/load_guard.py (runbook step 5, OOM under load) through the real pyinfra CLI on the rehearsal cluster."""

from __future__ import annotations

from fixtures import pyinfra_run
from fixtures.budget_world import (
    GOOD_ARGS,
    LOAD_GUARD,
    LOCAL,
    args_of,
    assert_no_changes,
    kv_logged,
    rolled_out,
    scenario,
    with_args,
)
from fixtures.dry_run import dry_then_apply
from fixtures.pyinfra_run import Rehearsal
from fixtures.restore_world import host_out, vllm_runtime
from vllm_remedy.remedies.predict import predict_template

rehearsal = pyinfra_run.rehearsal
exact_rehearsal = pyinfra_run.exact_rehearsal  # vLLM's log compared with the prediction exactly

BIG_PREFILL = [*GOOD_ARGS, "--max-num-batched-tokens", "16384"]


def test_caps_the_prefill_chunk_and_pods_start_with_the_predicted_kv(exact_rehearsal: Rehearsal) -> None:
    rehearsal = exact_rehearsal
    scenario(rehearsal, with_args(BIG_PREFILL), "bigger prefill chunks for throughput")
    dry, got = dry_then_apply(rehearsal, LOCAL, LOAD_GUARD, expect_diffs=1)  # --dry wrote nothing, -y wrote it
    shown = host_out(dry.stderr)
    assert "-    - '16384'" in shown and "+    - '4096'" in shown, shown
    assert len([line for line in shown if line.startswith("prediction on NVIDIA-L40S: fits")]) == 1, shown
    assert got.returncode == 0, got.stderr
    summary = "cap load on deployment llm/llama-8b: --max-num-batched-tokens 4096"
    assert any(line.startswith(summary + ": written") for line in host_out(got.stderr)), got.stderr
    after = rolled_out(rehearsal)
    assert args_of(after) == [*GOOD_ARGS, "--max-num-batched-tokens", "4096"]
    assert after["metadata"]["annotations"]["kubernetes.io/change-cause"] == (
        "vllm-remedy load-guard: OOM under load (step 5): cap per policy: --max-num-batched-tokens 4096")
    predicted = predict_template(after["spec"]["template"]).estimate
    assert predicted is not None
    assert set(kv_logged(rehearsal).values()) == {predicted.kv_cache_tokens}

    assert_no_changes(rehearsal, LOAD_GUARD, 4)


def test_never_raises_a_cap_the_default_already_keeps(rehearsal: Rehearsal) -> None:
    vllm_runtime(rehearsal)
    # 0.8.5 on a 44 GiB card defaults to 2048 batched tokens, below the policy's 4096
    assert_no_changes(rehearsal, LOAD_GUARD, 4)
    for mode in ("--dry", "-y"):  # and says so, rather than a bare "-", in both modes
        got = rehearsal.pyinfra(LOCAL, LOAD_GUARD, mode)
        assert ("noop: no cap to lower on deployment llm/llama-8b: --max-num-batched-tokens: 2048 in effect is "
                "already <= 4096") in host_out(got.stderr), got.stderr
