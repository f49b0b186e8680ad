"""The scheduled drift check on a live Deployment whose vLLM spans more GPUs than its pod gets: the prediction check
is drift (as the crash loop the rehearsal pod shows is), never "fits" beside it."""

from __future__ import annotations

from typing import Any

import pytest

from vllm_remedy.drift import checks
from vllm_remedy.facts.pods import pods_data
from vllm_remedy.kube.annotations import parse_rfc3339
from vllm_remedy.policy import Policy

NOW = parse_rfc3339("2026-01-01T12:00:00Z")


def deployment(extra: list[str], gpus: str | None) -> dict[str, Any]:
    resources = {"limits": {"nvidia.com/gpu": gpus}} if gpus is not None else {}
    container = {"name": "vllm", "image": "vllm/vllm-openai:v0.11.0", "command": ["vllm", "serve"],
                 "args": ["meta-llama/Llama-3.1-8B-Instruct", "--max-model-len", "8192", *extra],
                 "resources": resources}
    return {"metadata": {"name": "m", "namespace": "llm", "uid": "d1", "annotations": {}},
            "spec": {"selector": {"matchLabels": {"app": "m"}},
                     "template": {"metadata": {"labels": {"app": "m"}},
                                  "spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"},
                                           "containers": [container]}}}}


def run(dep: dict[str, Any]) -> dict[str, checks.Check]:
    policy = Policy.from_mapping({"gpu": {"products": ["NVIDIA-L40S"]}})
    return {c.name: c for c in checks.run_checks(dep, policy, NOW, pods=pods_data(dep, [], [], {}, "vllm")).checks}


# 0.11.0 has no config check: Ray's placement group for the world size is never ready (``parallel.world_size_words``)
RAY_2 = "placement_group_specs=[{'GPU': 1.0, 'node:<pod IP>': 0.001}, {'GPU': 1.0}] within 1800 seconds"


@pytest.mark.parametrize(("extra", "gpus", "said"), [
    (["--tensor-parallel-size", "2"], "1", RAY_2),
    (["--pipeline-parallel-size", "2"], "1", RAY_2),
    (["--data-parallel-size", "2"], "1", "No CUDA GPUs are available"),
    ([], None, "No CUDA GPUs are available"),
])
def test_a_world_the_pod_cannot_hold_is_drift(extra, gpus, said):
    got = run(deployment(extra, gpus))["prediction"]
    assert got.status == "drift" and got.detail.startswith("predicted to fail: ") and said in got.detail, got


def test_a_world_the_pod_holds_is_not():
    got = run(deployment(["--tensor-parallel-size", "2"], "2"))["prediction"]
    assert got.status == "pass", got


def test_pipeline_stages_on_a_pod_that_holds_them_are_unknown_not_a_number():
    """As check says: the memory model does not size pipeline stages (vllm.memory.pipeline)."""
    got = run(deployment(["--pipeline-parallel-size", "2"], "2"))
    for name in ("prediction", "concurrency"):
        assert got[name].status == "unknown" and "pipeline parallel is not modelled" in got[name].detail, got[name]


@pytest.mark.parametrize(("tag", "extra", "first"), [
    # the model config's length before the world size on every release (Llama-3.1-8B: 131072 positions)
    ("v0.14.0", ["--max-model-len", "200000", "--tensor-parallel-size", "2"], "max_len_exceeds_model"),
    # 0.11.0's executor comes after every config check: the heads refusal speaks first
    ("v0.11.0", ["--tensor-parallel-size", "3"], "attention heads (32) must be divisible"),
    # argparse before anything
    ("v0.14.0", ["--tensor-parallel-size", "2", "--gpu-memory-utilization", "lots"], "argument parsing (exit 2)"),
])
def test_an_earlier_refusal_is_what_the_prediction_says_first(tag, extra, first):
    """As check and drift's manifest check say: vLLM's log ends with the refusal it runs first; the world size is
    what refuses next."""
    dep = deployment([], "1")
    container = dep["spec"]["template"]["spec"]["containers"][0]
    container["args"], container["image"] = [container["args"][0], *extra], f"vllm/vllm-openai:{tag}"
    got = run(dep)["prediction"]
    assert got.status == "drift" and got.detail.startswith("predicted to fail: "), got
    head, _, then = got.detail.partition("; then, that fixed: ")
    assert first in head and "world size" not in head, got.detail
    assert then.startswith("world size"), got.detail
