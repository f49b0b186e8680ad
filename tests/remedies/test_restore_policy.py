"""Restore's policy conflicts are drift's verdicts, and a conflicting candidate is never "pinned in policy" (F4)."""

from __future__ import annotations

import pytest

from fixtures.kube_objects import GOOD_ARGS, deployment, pod_template
from vllm_remedy.drift.checks import DRIFT, check_concurrency, check_gpu_pinned, observe
from vllm_remedy.drift.checks import predict as drift_predict
from vllm_remedy.kube.annotations import Keys
from vllm_remedy.kube.history import Revision
from vllm_remedy.kube.rollout import RULE_CONFLICT, RULE_POLICY, choose_rollback, policy_pin
from vllm_remedy.policy import Policy
from vllm_remedy.remedies.pin_gpu import canonical_product
from vllm_remedy.remedies.predict import pinned_gpu
from vllm_remedy.remedies.restore_policy import concurrency_problem, gpu_problems, policy_conflicts, predicted

POLICY = Policy.from_mapping({"gpu": {"products": ["NVIDIA-L40S"]}, "peak_concurrency": 8})
UNPINNED = Policy.from_mapping({"peak_concurrency": 8})


def template(product: str | None, gpus: str = "1", args: list[str] = GOOD_ARGS) -> dict:
    tpl = pod_template(args, product or "NVIDIA-L40S")
    if product is None:
        tpl["spec"].pop("nodeSelector")
    limits = tpl["spec"]["containers"][0]["resources"]
    limits["limits"]["nvidia.com/gpu"] = limits["requests"]["nvidia.com/gpu"] = gpus
    return tpl


CASES = [template("NVIDIA-L40S"), template("NVIDIA-L4"), template(None), template("NVIDIA-L40S", gpus="2"),
         template("NVIDIA-L40S-SHARED"), template("NVIDIA-A100-SXM4-80GB"),
         template("NVIDIA-L40S", args=[*GOOD_ARGS[:3], "131072", *GOOD_ARGS[4:]])]


@pytest.mark.parametrize("policy", [POLICY, UNPINNED])
@pytest.mark.parametrize("tpl", CASES)
def test_the_conflicts_are_drifts_own_verdicts(policy: Policy, tpl: dict) -> None:
    dep = deployment(tpl, 3)
    _, observed = observe(dep, Keys())
    gpu = check_gpu_pinned(policy, observed)
    problems = gpu_problems(policy, observed.gpu, observed.gpus_per_pod)
    assert (gpu.status == DRIFT) == bool(problems) and (not problems or gpu.detail == "; ".join(problems))
    concurrency = check_concurrency(policy, drift_predict(dep, policy))
    short = concurrency_problem(policy, predicted(tpl, policy))
    assert short is None or (concurrency.status, concurrency.detail) == (DRIFT, short)
    if concurrency.status == DRIFT and "is below the policy's peak" in concurrency.detail:
        assert short == concurrency.detail
    if pinned_gpu(tpl["spec"]) == "NVIDIA-L4":  # 1.97x at 16384 on the 24 GB card: the rule is exercised
        assert short is not None and short.startswith("predicted maximum concurrency 1.97x on NVIDIA-L4"), short


def revision(number: int, product: str) -> Revision:
    return Revision(number=number, replicaset=f"llama-8b-{number}", change_cause="", template=template(product),
                    annotations={}, created="", replicas=0, current=False)


def test_a_unit_on_a_gpu_the_policy_forbids_ranks_below_the_same_unit_it_allows() -> None:
    history = [revision(23, "NVIDIA-L40S"), revision(24, "nvidia-l4"), revision(25, "NVIDIA-L40S")]
    history[2].template["spec"]["containers"][0]["args"] = ["--model", "meta-llama/Llama-3.1-8B-Instruct"]
    unit = Policy.from_mapping({"gpu": {"products": ["NVIDIA-L40S"]}, "peak_concurrency": 8, "known_good": [
        {"image": "vllm/vllm-openai:v0.8.5", "flags": {"max-model-len": 16384, "gpu-memory-utilization": 0.9,
                                                      "max-num-seqs": 64}}]})
    choice = choose_rollback(history, 25, pinned=policy_pin(unit.known_good), conflicts=policy_conflicts(unit))
    assert (choice.revision.number, choice.rule) == (23, RULE_POLICY)
    assert choice.skipped[0].startswith("revision 24 (llama-8b-24): ranked below the revisions the policy allows "
                                        "(pinned in policy): pinned to nvidia-l4, policy allows NVIDIA-L40S")
    # with nothing the policy allows left, the conflicting one is taken - named, and never "pinned in policy"
    only = choose_rollback(history[1:], 25, pinned=policy_pin(unit.known_good), conflicts=policy_conflicts(unit))
    assert (only.revision.number, only.rule) == (24, RULE_CONFLICT)
    assert "pinned in policy" not in only.rule
    assert "against the policy: pinned to nvidia-l4, policy allows NVIDIA-L40S" in only.detail
    assert canonical_product(pinned_gpu(only.revision.template["spec"]) or "") == "NVIDIA-L4"
