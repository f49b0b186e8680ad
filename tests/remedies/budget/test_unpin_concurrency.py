"""The kv-cache-pin rung: a flag-sized KV cache that starts but holds fewer requests than required is offered without
its flag, predicted on the utilization budget; a failing pin is lifted in every rung instead (no rung of its own)."""

from __future__ import annotations

from vllm_remedy.remedies.budget import BudgetRequest, plan_budget
from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.memory import EngineSettings

LLAMA = catalog.model("meta-llama/Llama-3.1-8B-Instruct")
L40S = catalog.gpu("NVIDIA-L40S")
L4 = catalog.gpu("NVIDIA-L4")


def _plan(gpu, version, flags, target):
    settings = EngineSettings.from_flags({"max-model-len": "16384", **flags}, version)
    return plan_budget(BudgetRequest(LLAMA, gpu, settings, target_concurrency=target, node_gpus=1))


def test_on_0_34_the_rung_writes_the_utilization_it_was_predicted_with():
    plan = _plan(L40S, "0.34.0", {"num-gpu-blocks-override": "512"}, 8)  # 64-token blocks on 0.34: 2x at 16,384
    assert plan.current.start == "fits" and plan.current.max_concurrency < 8
    first = next(s for s in plan.steps if s.lever == "kv-cache-pin")
    assert first.lever == "kv-cache-pin" and first.unset == ("num-gpu-blocks-override",), first
    assert first.set.get("gpu-memory-utilization") == "0.92" and first.prediction.max_model_len == 16384, first


def test_a_failing_pin_has_no_rung_of_its_own():
    plan = _plan(L4, "0.11.0", {"kv-cache-memory-bytes": "8G"}, 1)
    assert plan.current.start == "kv_cache_allocation_oom"
    assert plan.steps and all(s.lever != "kv-cache-pin" and "kv-cache-memory-bytes" in s.unset for s in plan.steps)


def test_every_unpin_rung_is_predicted_to_hold_the_target():
    seen = 0
    for gpu, pin in ((L4, "2G"), (L40S, "4G")):
        plan = _plan(gpu, "0.11.0", {"kv-cache-memory-bytes": pin}, 4)
        seen += sum(s.lever == "kv-cache-pin" for s in plan.steps)
        for step in (s for s in plan.steps if s.lever == "kv-cache-pin"):
            assert step.unset == ("kv-cache-memory-bytes",) and step.prediction.start == "fits", step
            assert step.prediction.max_concurrency >= plan.subject["requiredConcurrency"], step
    assert seen >= 2, seen  # both pins are short of 4 x 1.25 = 5x; the budget holds more on either card
