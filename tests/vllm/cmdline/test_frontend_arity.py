"""The words a frontend flag takes, per release (hostile review 2026-12-06, finding 2): --api-key one word up to 0.9.2
(entrypoints/openai/cli_args.py@0.6.5/0.8.5/0.9.2), ``nargs='+'`` from 0.10.1 (FrontendArgs ``list[str]``);
--middleware (``action="append"``) and --allowed-origins/-methods/-headers (``json.loads``, ``nargs`` deleted) one
word in every release read. The rehearsal pod starts the model tag that follows them."""

from __future__ import annotations

import pytest

from vllm_remedy.sim.seed import make_node
from vllm_remedy.sim.vllm_pod.launch import Launch, plan
from vllm_remedy.vllm.cmdline import find_server

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"


def _container(tag: str, *args: str) -> dict:
    return {"name": "vllm", "image": f"vllm/vllm-openai:{tag}", "command": ["vllm", "serve"], "args": list(args),
            "resources": {"limits": {"nvidia.com/gpu": "1"}}}


@pytest.mark.parametrize(("tag", "flag", "model", "value"), [
    ("v0.8.5", "--api-key", LLAMA, "x"),
    ("v0.9.2", "--api-key", LLAMA, "x"),
    ("v0.10.1", "--api-key", None, f"x {LLAMA}"),
    ("v0.11.0", "--middleware", LLAMA, "x"),
    ("v0.34.0", "--allowed-headers", LLAMA, "x"),
    ("v0.8.5", "--allowed-methods", LLAMA, "x"),
])
def test_words_taken(tag: str, flag: str, model: str | None, value: str) -> None:
    server = find_server({"containers": [_container(tag, flag, "x", LLAMA, "--max-model-len", "16384")]})
    assert server.model == model
    assert server.flags[flag[2:]] == value


def test_the_rehearsal_pod_serves_the_model_after_a_one_word_api_key() -> None:
    c = _container("v0.8.5", "--api-key", "x", LLAMA, "--max-model-len", "16384")
    node = make_node({"name": "n", "gpu": {"product": "NVIDIA-L40S", "count": 1}}, "t")
    got = plan(find_server({"containers": [c]}), c, node)
    assert isinstance(got, Launch), got
    assert got.model_id == LLAMA
