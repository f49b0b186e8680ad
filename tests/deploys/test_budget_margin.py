"""deploys/budget.py keeps the estimate margin: a revision that fits only as predicted, by less than the estimator's
held-out error, gets a shorter --max-model-len (real pyinfra CLI, rehearsal cluster)."""

from __future__ import annotations

from fixtures import pyinfra_run
from fixtures.budget_world import BUDGET, LOCAL, MODEL, args_of, deployment, kv_logged, live_pods, scenario, with_args
from fixtures.dry_run import dry_then_apply
from fixtures.pyinfra_run import Rehearsal
from fixtures.restore_world import host_out, write_inventory
from vllm_remedy.vllm.memory.kv_margin import KV_ESTIMATE_MARGIN, KV_MARGIN_PERCENTILE

rehearsal = pyinfra_run.rehearsal
exact_rehearsal = pyinfra_run.exact_rehearsal  # vLLM's log compared with the prediction exactly

#: Revision 15: the runbook's 16384 at utilization 0.83. vLLM 0.8.5 on the L40S is predicted to start and hold
#: 10.52 of the policy's 10 (8 x 1.25) max-length requests: 5.2 % spare, less than the margin.
TIGHT = [MODEL, "--max-model-len", "16384", "--gpu-memory-utilization", "0.83", "--max-num-seqs", "64"]
REQUIRED = 10.0
PCT = f"{KV_ESTIMATE_MARGIN * 100:.3g} %"
MARGIN = f"{PCT} KV estimate margin (covers the estimator's error in {KV_MARGIN_PERCENTILE} % of held-out startup logs)"


def test_a_revision_inside_the_margin_gets_a_shorter_max_model_len_that_holds_the_target(exact_rehearsal: Rehearsal
                                                                                        ) -> None:
    rehearsal = exact_rehearsal
    scenario(rehearsal, with_args(TIGHT), "utilization 0.83")
    tokens = set(kv_logged(rehearsal).values())
    assert len(tokens) == 1 and tokens.pop() / 16384 >= REQUIRED  # it does start and hold the target today
    dry, got = dry_then_apply(rehearsal, LOCAL, BUDGET, expect_diffs=1)
    assert got.returncode == 0, got.stderr
    lines = host_out(dry.stderr)
    assert ("problem: the predicted KV cache for 10.00x at max-model-len 16,384 fits by 4 %, below the "
            f"{PCT} estimate margin") in lines, lines
    assert f"note: {MARGIN}" in lines, lines
    after = deployment(rehearsal)
    args = args_of(after)
    length = int(args[args.index("--max-model-len") + 1])
    assert args[:1] + args[3:] == TIGHT[:1] + TIGHT[3:] and length < 16384 and length % 256 == 0
    reason = after["metadata"]["annotations"]["vllm-remedy.io/last-action-reason"]
    assert reason.startswith(f"max-model-len: largest max-model-len within bounds that fits: {length:,} (16,384 fits "
                             f"by 4 %, below the {PCT} estimate margin)"), reason
    # vLLM's own log on the new pods: the KV cache less the margin holds the target at this length, not one step
    # longer (0.8.5 counts concurrency as tokens / length).
    assert len(live_pods(rehearsal)) == 2
    (logged,) = set(kv_logged(rehearsal).values())
    assert logged * (1 - KV_ESTIMATE_MARGIN) / length >= REQUIRED > logged * (1 - KV_ESTIMATE_MARGIN) / (length + 256)


def test_policy_margin_zero_trusts_the_point_estimate(exact_rehearsal: Rehearsal) -> None:
    rehearsal = exact_rehearsal
    before = scenario(rehearsal, with_args(TIGHT), "utilization 0.83")
    policy = rehearsal.tmp / "policy.yaml"
    policy.write_text(f"extends: {pyinfra_run.ROOT / 'policies' / 'llama-8b.yaml'}\nbudget: {{kv_margin: 0}}\n")
    got = rehearsal.pyinfra(write_inventory(rehearsal.tmp, policy=str(policy)), BUDGET, "-y")
    assert got.returncode == 0, got.stderr
    assert deployment(rehearsal)["metadata"]["generation"] == before["metadata"]["generation"]


def test_a_bad_policy_margin_is_one_line_naming_file_and_key(rehearsal: Rehearsal) -> None:
    before = scenario(rehearsal, with_args(TIGHT), "utilization 0.83")
    policy = rehearsal.tmp / "policy.yaml"
    policy.write_text(f"extends: {pyinfra_run.ROOT / 'policies' / 'llama-8b.yaml'}\nbudget: {{kv_margin: 0.7}}\n")
    got = rehearsal.pyinfra(write_inventory(rehearsal.tmp, policy=str(policy)), BUDGET, "-y")
    assert got.returncode != 0
    wanted = f"{policy}: budget.kv_margin: expected a fraction of the predicted KV cache in [0, 0.5], got 0.7"
    assert any(wanted in line for line in got.stderr.splitlines()), got.stderr
    assert deployment(rehearsal)["metadata"]["generation"] == before["metadata"]["generation"]
