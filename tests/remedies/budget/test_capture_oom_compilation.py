"""The planner's graph rungs edit what the start's graphs hang on: no capture-size flag where --compilation-config
sets the sizes (the flag would change nothing through 0.11.0 and is refused beside them from 0.11.1) or turns the
graphs off, and no --enforce-eager where -O0 already runs V1 eager (hostile review, finding 1)."""

from __future__ import annotations

from vllm_remedy.remedies.budget import BudgetRequest, plan_budget
from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.memory import EngineSettings
from vllm_remedy.vllm.outcomes import Failure

LLAMA = catalog.model("meta-llama/Llama-3.1-8B-Instruct")
L4 = catalog.gpu("NVIDIA-L4")
ROOMY = {"gpu-memory-utilization": "0.95", "max-model-len": "8192"}
SIZES = '{"cudagraph_capture_sizes": [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]}'


def _plan(flags: dict[str, str], version: str):
    return plan_budget(BudgetRequest(LLAMA, L4, EngineSettings.from_flags({**ROOMY, **flags}, version),
                                     failure=Failure.CUDAGRAPH_CAPTURE_OOM, target_concurrency=2))


def test_no_capture_size_flag_where_the_config_sets_the_sizes() -> None:
    plan = _plan({"compilation-config": SIZES}, "0.9.2")
    assert "cudagraph-capture-size" not in [s.lever for s in plan.steps]
    assert not any("cuda-graph-sizes" in s.set for s in plan.steps)


def test_no_graph_rungs_where_o0_already_runs_eager() -> None:
    plan = _plan({"optimization-level": "0"}, "0.12.0")
    levers = [s.lever for s in plan.steps]
    assert "cudagraph-capture-size" not in levers and "enforce-eager" not in levers
