"""The engine's config line of a rehearsal pod prints the pipeline stages its arguments set (it printed
``pipeline_parallel_size=1`` for every start): a LeaderWorkerSet leader of TP 1 × PP 2 prints ``tensor_parallel_size=1,
pipeline_parallel_size=2`` and lists ``pipeline_parallel_size`` among vLLM's non-default arguments, while its ranks are
still the group's two GPUs."""

from __future__ import annotations

import re
from datetime import datetime

from vllm_remedy.sim.seed import make_node
from vllm_remedy.sim.vllm_pod import timeline
from vllm_remedy.sim.vllm_pod.launch import Launch, plan
from vllm_remedy.vllm.cmdline import find_server
from vllm_remedy.vllm.outcomes import Failure

QWEN = "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B"


def _log(tag: str, *args: str, group: int) -> str:
    c = {"name": "vllm-leader", "image": f"vllm/vllm-openai:{tag}", "command": ["vllm", "serve"], "args": list(args),
         "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    node = make_node({"name": "n", "gpu": {"product": "NVIDIA-L40S", "count": 1}}, "t")
    got = plan(find_server({"containers": [c]}), c, node, group_size=group)
    assert isinstance(got, Launch), got
    return timeline.render(got, Failure.NONE, datetime(2026, 1, 1))


def _config_line(log: str) -> str:
    return next(line for line in log.splitlines() if "with config:" in line)


def test_a_group_leader_prints_its_pipeline_stages() -> None:
    log = _log("v0.8.5", QWEN, "--max-model-len", "32768", "--tensor-parallel-size", "1",
               "--pipeline-parallel-size", "2", "--distributed-executor-backend", "ray", group=2)
    line = _config_line(log)
    assert "tensor_parallel_size=1, pipeline_parallel_size=2," in line, line


def test_the_non_default_args_list_the_stages() -> None:
    log = _log("v0.11.0", QWEN, "--max-model-len", "32768", "--pipeline-parallel-size", "2",
               "--distributed-executor-backend", "ray", group=2)
    args = next(line for line in log.splitlines() if "non-default args" in line)
    assert "'pipeline_parallel_size': 2" in args and "tensor_parallel_size" not in args, args
    assert re.search(r"tensor_parallel_size=1, pipeline_parallel_size=2,", _config_line(log))
