"""A rehearsal pod reads single-dash compilation options per release as vLLM does (hostile review 2026-12-06, finding
1): ``-O 4`` from 0.12.0 is argparse's ``unrecognized arguments: -O 4`` (only ``-O <0-3>`` becomes
``--optimization-level``: utils/argparse_utils.py@0.12.0/0.14.0), not VllmConfig's refusal of level 4; ``-cc`` before
0.12.0 is no option (``-cc.k=v`` folded into ``-cc <json>`` from 0.9.2: utils/__init__.py@0.10.1/0.11.0)."""

from __future__ import annotations

import pytest

from vllm_remedy.sim.seed import make_node
from vllm_remedy.sim.vllm_pod.launch import Launch, Refusal, plan
from vllm_remedy.vllm.cmdline import find_server

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"


def judge(tag: str, *args: str) -> Launch | Refusal:
    c = {"name": "vllm", "image": f"vllm/vllm-openai:{tag}", "command": ["vllm", "serve"],
         "args": [LLAMA, *args], "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    node = make_node({"name": "n", "gpu": {"product": "NVIDIA-L40S", "count": 1}}, "t")
    return plan(find_server({"containers": [c]}), c, node)


@pytest.mark.parametrize(("tag", "args", "error"), [
    ("v0.13.0", ["-O", "4"], "unrecognized arguments: -O 4"),
    ("v0.10.2", ["-cc.cudagraph_mode=NONE"], 'unrecognized arguments: -cc {"cudagraph_mode": "NONE"}'),
    ("v0.11.0", ["-cc", '{"cudagraph_mode":"NONE"}'], 'unrecognized arguments: -cc {"cudagraph_mode":"NONE"}'),
    ("v0.9.0", ["-cc.cudagraph_mode=NONE"], "unrecognized arguments: -cc.cudagraph_mode=NONE"),
])
def test_unknown_short_options_are_argparse_s_leftovers(tag: str, args: list[str], error: str) -> None:
    got = judge(tag, *args)
    assert isinstance(got, Refusal) and got.stage == "argparse", got
    assert got.error.endswith(f"vllm: error: {error}"), got.error  # a leftover: the top parser refuses it


@pytest.mark.parametrize(("tag", "args"), [("v0.13.0", ["-O", "3"]), ("v0.12.0", ["-cc.cudagraph_mode=NONE"])])
def test_the_release_s_own_short_options_start(tag: str, args: list[str]) -> None:
    assert isinstance(judge(tag, *args), Launch)


def test_an_attached_level_outside_0_3_is_still_vllm_config_s_refusal() -> None:
    got = judge("v0.13.0", "-O4")
    assert isinstance(got, Refusal) and got.stage == "config" and "Input should be 0, 1, 2 or 3" in got.error
