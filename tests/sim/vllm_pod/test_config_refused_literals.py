"""A rehearsal pod with a literal vLLM's config classes refuse (``--gpu-memory-utilization 1.5``, ``--max-num-seqs
0`` from 0.12.0) stops at config time with vLLM's exception, not with the tools' phrase (hostile review, finding 4)."""

from __future__ import annotations

import pytest

from vllm_remedy.sim.seed import make_node
from vllm_remedy.sim.vllm_pod.launch import Refusal, plan
from vllm_remedy.vllm.cmdline import find_server

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"


def judge(tag: str, *args: str) -> object:
    c = {"name": "vllm", "image": f"vllm/vllm-openai:{tag}", "command": ["vllm", "serve"],
         "args": [LLAMA, "--max-model-len", "8192", *args], "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    node = make_node({"name": "n", "gpu": {"product": "NVIDIA-L40S", "count": 1}}, "t")
    return plan(find_server({"containers": [c]}), c, node)


@pytest.mark.parametrize(("tag", "args", "error"), [
    ("v0.8.5", ["--gpu-memory-utilization", "1.5"],
     "ValueError: GPU memory utilization must be less than 1.0. Got 1.5."),
    ("v0.12.0", ["--max-num-seqs", "0"], "ValidationError: 1 validation error for SchedulerConfig\nmax_num_seqs\n  "
     "Input should be greater than or equal to 1 [type=greater_than_equal, input_value=0, input_type=int]"),
])
def test_the_pod_stops_at_config_with_vllm_s_exception(tag: str, args: list[str], error: str) -> None:
    got = judge(tag, *args)
    assert isinstance(got, Refusal) and got.stage == "config", got
    assert got.error == error


def test_an_unknown_quantization_from_0_13_is_model_config_s_refusal() -> None:
    got = judge("v0.20.0", "--quantization", "nonsense")
    assert isinstance(got, Refusal) and got.stage == "config", got
    assert got.error.startswith("ValidationError: 1 validation error for ModelConfig\n  Value error, Unknown "
                                "quantization method: nonsense. Must be one of ['awq', ")
