"""Under a policy that pins GPU products and GPUs per pod, no rung of the plan ``plan --policy`` builds
(``policy_gpu.plan_within_policy``, as check's fix and deploys/budget.py plan) leaves the policy's products or asks for
another GPU count; and a reason names whose max-model-len it cut (the policy's preferred 16,384 read "the model's").

The runbook's revision 15 (tests/data/manifests/runbook/bad-rev15.yaml): Llama-3.1-8B on vLLM 0.8.5, max-model-len
implicit, pinned to the L4 pool; policies/llama-8b.yaml allows only NVIDIA-L40S with one GPU per pod (TP max 2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_remedy.policy import Policy, load_policy
from vllm_remedy.remedies.budget import BudgetRequest, plan_budget, policy_gpu
from vllm_remedy.remedies.budget.policy_gpu import plan_within_policy
from vllm_remedy.remedies.pin_gpu import canonical_product
from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.memory import EngineSettings
from vllm_remedy.vllm.outcomes import Failure

ROOT = Path(__file__).resolve().parents[3]
POLICY = load_policy(ROOT / "policies" / "llama-8b.yaml")
LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
L4_POOL = {"cloud.google.com/gke-accelerator": "nvidia-l4"}
REV15 = {"gpu-memory-utilization": "0.90", "max-num-seqs": "64"}


def _request(flags: dict[str, str], version: str = "0.8.5", policy: Policy | None = POLICY,
             failure: Failure | None = None, other_gib: str | None = None) -> BudgetRequest:
    inputs = {"other-process-gib": other_gib} if other_gib else {}
    return BudgetRequest(model=catalog.model(LLAMA), gpu=catalog.gpu("nvidia-l4"),
                         settings=EngineSettings.from_flags(flags, version, inputs), policy=policy, failure=failure,
                         node_selector=L4_POOL, gpu_label="nvidia-l4")


@pytest.mark.parametrize(("flags", "version", "failure", "other_gib"), [
    (REV15, "0.8.5", None, None),
    (REV15, "0.8.5", Failure.MAX_LEN_EXCEEDS_KV, None),  # what the L4 pods logged
    (REV15, "0.8.5", None, "8"),  # another process holds GPU memory: shorter lengths, a higher utilization
    ({**REV15, "max-model-len": "16384"}, "0.8.5", None, "12"),
    (REV15, "0.11.0", None, "4"),  # the CUDA-graph capture size as a lever
    ({"max-model-len": "8192"}, "0.11.0", None, None),  # fits the L40S as it is: the pin alone
], ids=["rev15", "rev15-logged", "held-8", "held-12", "held-0.11", "8k-0.11"])
def test_no_rung_leaves_the_policys_products_or_gpus_per_pod(flags: dict[str, str], version: str,
                                                            failure: Failure | None, other_gib: str | None) -> None:
    plan = plan_within_policy(_request(flags, version, failure=failure, other_gib=other_gib), "nvidia-l4")
    allowed = {canonical_product(p) for p in POLICY.gpu.products}
    assert plan.verdict == "change" and plan.steps, plan
    for step in plan.steps:
        pinned = step.template.node_selector.get(POLICY.gpu.label)
        assert pinned is not None and canonical_product(pinned) in allowed, step  # every rung pins the L40S
        assert canonical_product(step.gpu or "") in allowed, step  # and is predicted there
        assert "cloud.google.com/gke-accelerator" in step.template.drop_node_selector, step
        assert (step.template.gpu_limit or 1) == POLICY.gpu.per_pod, step  # the pod asks for 1 GPU, as it does now
        assert "tensor-parallel-size" not in step.set, step
    assert plan.subject["gpu"] == "NVIDIA-L4" and plan.current.total_gib == catalog.gpu("nvidia-l4").total_gib


def test_the_runbook_incident_is_planned_on_the_l40s_as_check_and_budget_plan_it() -> None:
    plan = plan_within_policy(_request(REV15, failure=Failure.MAX_LEN_EXCEEDS_KV), "nvidia-l4")
    first = plan.steps[0]
    assert (dict(first.set), dict(first.template.node_selector), first.template.drop_node_selector, first.gpu) == (
        {"max-model-len": "16384"}, {"nvidia.com/gpu.product": "NVIDIA-L40S"}, ("cloud.google.com/gke-accelerator",),
        "NVIDIA-L40S")
    assert plan.notes[:2] == ("nvidia-l4 is not among the policy's GPU products (NVIDIA-L40S): planned on NVIDIA-L40S, "
                              "each change pins it (as check's smallest fix and deploys/budget.py's pin step do)",
                              "what the log showed on NVIDIA-L4 is not evidence about NVIDIA-L40S")
    assert plan.problem.startswith("pinned to nvidia-l4, policy allows NVIDIA-L40S; on NVIDIA-L40S: ")


def test_an_allowed_pin_is_planned_as_before() -> None:
    req = BudgetRequest(model=catalog.model(LLAMA), gpu=catalog.gpu("NVIDIA-L40S"),
                        settings=EngineSettings.from_flags(REV15, "0.8.5"), policy=POLICY,
                        node_selector={"nvidia.com/gpu.product": "NVIDIA-L40S"}, gpu_label="NVIDIA-L40S")
    assert plan_within_policy(req, "NVIDIA-L40S") == plan_budget(req)


def test_a_cut_length_is_named_by_where_it_comes_from(tmp_path: Path) -> None:
    """The runbook policy without its product pin (so GPUs per pod are not held either, as drift holds them only with a
    pin): the TP 2 rung on the L4 cuts below the policy's preferred 16,384; without a policy, below the model's
    131,072."""
    path = tmp_path / "unpinned.yaml"
    path.write_text(f"extends: {ROOT / 'policies' / 'llama-8b'}\ngpu: {{products: []}}\n")
    unpinned = load_policy(path)
    cut = [s for s in plan_budget(_request(REV15, policy=unpinned)).steps if "the longest that then fits" in s.reason]
    assert cut and all("the policy's 16,384 does not" in s.reason for s in cut), [s.reason for s in cut]
    bare = [s for s in plan_budget(_request(REV15, policy=None)).steps if "the longest that then fits" in s.reason]
    assert bare and all("the model's 131,072 does not" in s.reason for s in bare), [s.reason for s in bare]


@pytest.mark.parametrize(("tp", "problem"), [
    ("2", "tensor-parallel-size 2 needs 2 GPUs, the policy pins 1 GPU(s) per pod (gpu.per_pod)"),
    ("4", "tensor-parallel-size 4 is outside [1, 2] and needs 4 GPUs, the policy pins 1 GPU(s) per pod (gpu.per_pod)"),
])
def test_the_base_holds_a_running_tp_to_the_policys_gpus_per_pod(tp: str, problem: str) -> None:
    """The base every rung starts from kept TP 2 (inside the flag's bound, "no change needed") and moved TP 4 to 2,
    two GPUs per pod where the policy pins one; now each is a problem, and every rung runs TP 1 on one GPU."""
    req = BudgetRequest(model=catalog.model(LLAMA), gpu=catalog.gpu("NVIDIA-L40S"),
                        settings=EngineSettings.from_flags({**REV15, "max-model-len": "16384",
                                                            "tensor-parallel-size": tp}, "0.8.5"),
                        policy=POLICY, node_selector={"nvidia.com/gpu.product": "NVIDIA-L40S"}, gpu_label="NVIDIA-L40S")
    plan = plan_within_policy(req, "NVIDIA-L40S")
    assert plan.verdict == "change" and plan.steps and problem in plan.problem.split("; "), plan
    for step in plan.steps:
        assert (step.set.get("tensor-parallel-size"), step.template.gpu_limit) == ("1", 1), step
    assert plan.steps[0].reason.endswith("(the policy's 1 GPU(s) per pod, gpu.per_pod)") == (tp == "2"), plan.steps[0]
    # the note names the size the plan was held to (1), not the running one it moved off
    assert "tensor-parallel-size above 1 not offered: the policy pins 1 GPU(s) per pod (gpu.per_pod)" \
        in plan.notes, plan.notes


def test_an_allowed_product_is_kept_and_another_moved_to_the_first() -> None:
    """``policy_gpu.product``: check, plan and the budget deploy's one rule."""
    two = POLICY.model_copy(update={"gpu": POLICY.gpu.model_copy(update={"products": ("NVIDIA-A10G", "NVIDIA-L40S")})})
    assert [policy_gpu.product(two, p) for p in ("l40s", "NVIDIA-L40S", "nvidia-l4", None)] == [
        "NVIDIA-L40S", "NVIDIA-L40S", "NVIDIA-A10G", "NVIDIA-A10G"]
    assert policy_gpu.pin(two, {"karpenter.k8s.aws/instance-gpu-name": "l40s"}, "l40s") is None
    assert policy_gpu.product(None, "l40s") is None
