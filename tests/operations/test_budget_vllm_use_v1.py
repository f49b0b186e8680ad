"""deploys/budget.py (and drift's fix, restore) plans with the Deployment's VLLM_USE_V1 as check predicts with it
(``vllm.engine_env``): 0 on 0.9.2 is planned on V0's budget; a value in a Secret is "cannot predict", not V1."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from vllm_remedy.errors import UserError
from vllm_remedy.operations.budget import plan_for
from vllm_remedy.policy import Policy
from vllm_remedy.remedies.predict import predict_template

CTX = SimpleNamespace(policy=Policy.from_mapping({"gpu": {"products": ["NVIDIA-L40S"]}}), container=None,
                      where="deployment llm/m")


def template(env: list[dict[str, Any]]) -> dict[str, Any]:
    return {"spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"},
                     "containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.9.2", "env": env,
                                     "args": ["--model", "Qwen/Qwen2.5-7B-Instruct", "--max-model-len", "16384"],
                                     "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}


def test_the_budget_plan_sizes_the_engine_the_env_selects():
    v0 = template([{"name": "VLLM_USE_V1", "value": "0"}])
    plan, _ = plan_for(CTX, v0, None, None, {"nodes": []}, pods={})  # type: ignore[arg-type]
    predicted = predict_template(v0).estimate
    assert predicted is not None and plan.current.kv_cache_tokens == predicted.kv_cache_tokens
    default, _ = plan_for(CTX, template([]), None, None, {"nodes": []}, pods={})  # type: ignore[arg-type]
    assert plan.current.kv_cache_tokens < default.current.kv_cache_tokens  # V0 profiles the whole 16k prompt


def test_an_unreadable_value_is_cannot_predict():
    secret = [{"name": "VLLM_USE_V1", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]
    with pytest.raises(UserError, match=r"cannot predict VLLM_USE_V1: vLLM 0\.9\.2 selects its engine by it"):
        plan_for(CTX, template(secret), None, None, {"nodes": []}, pods={})  # type: ignore[arg-type]
