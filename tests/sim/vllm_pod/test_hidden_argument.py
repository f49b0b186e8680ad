"""A rehearsal pod whose args hold a variable-borne argument (`$(KVF)`) starts: the tools' "cannot predict" marker for
it (``ServerCommand.hidden``) is theirs, never a refusal in the simulated vLLM's name."""

from __future__ import annotations

from vllm_remedy.sim.vllm_pod.launch import Launch, plan
from vllm_remedy.vllm.cmdline import find_server

NODE = {"metadata": {"labels": {"nvidia.com/gpu.product": "NVIDIA-L40S"}}}


def test_a_variable_borne_argument_does_not_refuse_the_pod() -> None:
    c = {"name": "vllm", "image": "vllm/vllm-openai:v0.11.0", "command": ["vllm", "serve"],
         "args": ["meta-llama/Llama-3.1-8B-Instruct", "--max-model-len", "16384", "$(KVF)"],
         "env": [{"name": "KVF", "value": "--max-num-seqs=64"}], "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    got = plan(find_server({"containers": [c]}), c, NODE)
    assert isinstance(got, Launch), got
