"""deploys/budget.py (and drift's fix, which runs it) plans with the Deployment's VLLM_ALLOW_LONG_MAX_MODEL_LEN, as the
prediction it prints does (review 3, M4): the fix for a length the env var allows is not a max-length refusal."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from vllm_remedy.operations.budget import plan_for
from vllm_remedy.policy import Policy


def template(env: list[dict[str, Any]]) -> dict[str, Any]:
    return {"spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"},
                     "containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.11.0", "env": env,
                                     "args": ["--model", "meta-llama/Llama-3.1-8B-Instruct", "--max-model-len",
                                              "200000"], "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}


@pytest.mark.parametrize(("env", "outcome"), [
    ([{"name": "VLLM_ALLOW_LONG_MAX_MODEL_LEN", "value": "1"}], "max_len_exceeds_kv"),
    ([], "max_len_exceeds_model"),
])
def test_the_budget_plan_reads_the_env_var(env, outcome):
    ctx = SimpleNamespace(policy=Policy.from_mapping({"gpu": {"products": ["NVIDIA-L40S"]}}), container=None,
                          where="deployment llm/m")
    plan, product = plan_for(ctx, template(env), None, None, {"nodes": []}, pods={})  # type: ignore[arg-type]
    assert (product, plan.current.outcome.value) == ("NVIDIA-L40S", outcome)


@pytest.mark.parametrize(("tag", "value", "literal"), [("v0.11.0", "16Ki", "16384"), ("v0.8.5", "auto", None),
                                                       ("v0.8.3", "16k", "16000")])
def test_a_refused_spelling_is_planned_as_its_literal_and_every_step_writes_it(tag, value, literal):
    """drift's fix was refused (exit 3) for a --max-model-len the release's parser refuses, though the fix is one
    token (review 3, M8c)."""
    tpl = template([])
    c = tpl["spec"]["containers"][0]
    c["image"], c["args"][-1] = f"vllm/vllm-openai:{tag}", value
    ctx = SimpleNamespace(policy=Policy.from_mapping({"gpu": {"products": ["NVIDIA-L40S"]}}), container=None,
                          where="deployment llm/m")
    plan, _ = plan_for(ctx, tpl, None, None, {"nodes": []}, pods={})  # type: ignore[arg-type]
    assert plan.verdict == "change" and plan.steps, plan
    assert f"refuses {value!r}" in plan.problem or f"{value} needs" in plan.problem, plan.problem
    for step in plan.steps:
        assert step.set.get("max-model-len") == (literal or step.set.get("max-model-len")), step
        assert step.set.get("max-model-len", "").isdigit(), step
