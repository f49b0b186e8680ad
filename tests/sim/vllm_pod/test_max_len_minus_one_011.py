"""`--max-model-len -1` on a 0.11.0 rehearsal pod (hostile review, finding 5): 0.11.0's parser takes it
(human_readable_int ends in ``int("-1")``), ModelConfig keeps it (``max_model_len: SkipValidation[int]``,
``_get_and_verify_max_len`` returns it unchanged: config/model.py@0.11.0), and the worker fails building its buffers
(``torch.empty((self.max_model_len, 1))`` in ``GPUModelRunner.__init__``, v1/worker/gpu_model_runner.py@0.11.0, called
from ``Worker.init_device``). Not argparse's exit 2, and no auto-fit (that is 0.14.0's)."""

from __future__ import annotations

from datetime import datetime

from vllm_remedy.sim.seed import make_node
from vllm_remedy.sim.vllm_pod import timeline
from vllm_remedy.sim.vllm_pod.launch import Refusal, plan
from vllm_remedy.vllm.cmdline import find_server


def test_minus_one_on_011_fails_in_the_worker_not_at_parsing() -> None:
    c = {
        "name": "vllm",
        "image": "vllm/vllm-openai:v0.11.0",
        "command": ["vllm", "serve"],
        "args": ["meta-llama/Llama-3.1-8B-Instruct", "--max-model-len", "-1"],
        "resources": {"limits": {"nvidia.com/gpu": "1"}},
    }
    node = make_node({"name": "n", "gpu": {"product": "NVIDIA-L40S", "count": 1}}, "t")
    got = plan(find_server({"containers": [c]}), c, node)
    assert isinstance(got, Refusal) and got.stage == "worker", got
    assert got.error == "RuntimeError: Trying to create tensor with negative dimension -1: [-1, 1]"
    run = timeline.plan_refusal(got, datetime(2026, 1, 1))
    assert run.exit is not None and run.exit.code == 1
    assert any("gpu_model_runner.py" in line for line in run.exit.log)
    assert run.exit.log[-1].endswith("RuntimeError: Trying to create tensor with negative dimension -1: [-1, 1]")
