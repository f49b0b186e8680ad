"""A rehearsal pod whose argv vLLM's argument parser refuses for its shape ends as real vLLM does, exit 2 with
argparse's words: a flag without its value (``expected one argument``) and a positional beyond ``vllm serve``'s one
model tag (``unrecognized arguments``, reported after every option parsed, by the top-level ``vllm`` parser under
its own usage: the sub-parser only collects leftovers); and choices listed as each release
lists them (``sorted(Literal)`` from 0.11.0, engine/arg_utils.py ``literal_to_kwargs``; config/cache.py@0.11.0 has
no fp8_ds_mla). Hostile review, findings 2-3."""

from __future__ import annotations

from datetime import datetime

import pytest

from vllm_remedy.sim.seed import make_node
from vllm_remedy.sim.vllm_pod import timeline
from vllm_remedy.sim.vllm_pod.launch import Launch, Refusal, plan
from vllm_remedy.vllm.cmdline import find_server

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"


def judge(tag: str, *args: str, command: list[str] | None = None) -> Launch | Refusal:
    c = {
        "name": "vllm",
        "image": f"vllm/vllm-openai:{tag}",
        "command": command or ["vllm", "serve"],
        "args": list(args),
        "resources": {"limits": {"nvidia.com/gpu": "1"}},
    }
    node = make_node({"name": "n", "gpu": {"product": "NVIDIA-L40S", "count": 1}}, "t")
    return plan(find_server({"containers": [c]}), c, node)


def stderr(got: Launch | Refusal) -> tuple[str, ...]:
    assert isinstance(got, Refusal) and got.stage == "argparse", got
    run = timeline.plan_refusal(got, datetime(2026, 1, 1))
    assert run.exit is not None and run.exit.code == 2
    return run.exit.log


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ([LLAMA, "--max-model-len"], "argument --max-model-len: expected one argument"),
        ([LLAMA, "--max-model-len", "--enforce-eager"], "argument --max-model-len: expected one argument"),
        ([LLAMA, "extra-word", "--max-model-len", "8192"], "unrecognized arguments: extra-word"),
        ([LLAMA, "--enforce-eager", "one", "two"], "unrecognized arguments: one two"),
        (
            [LLAMA, "extra", "--max-model-len", "16Ki"],
            "argument --max-model-len: invalid human_readable_int value: '16Ki'",
        ),
        (
            [LLAMA, "--kv-cache-dtype", "fp9"],
            "argument --kv-cache-dtype: invalid choice: 'fp9' (choose from 'auto', "
            "'bfloat16', 'fp8', 'fp8_e4m3', 'fp8_e5m2', 'fp8_inc')",
        ),
        (
            [LLAMA, "--dtype", "float17"],
            "argument --dtype: invalid choice: 'float17' (choose from 'auto', 'bfloat16', "
            "'float', 'float16', 'float32', 'half')",
        ),
    ],
)
def test_vllm_serve_refuses_the_shape(args: list[str], error: str) -> None:
    if error.startswith("unrecognized arguments"):  # entrypoints/cli/main.py@0.11.0: six sub-commands, one line
        want = ("usage: vllm [-h] [-v] {chat,complete,serve,bench,collect-env,run-batch} ...", f"vllm: error: {error}")
    else:
        want = ("usage: vllm serve [model_tag] [options]", f"vllm serve: error: {error}")
    assert stderr(judge("v0.11.0", *args)) == want


def test_the_085_api_server_takes_no_positional() -> None:
    got = judge("v0.8.5", "--model", LLAMA, "extra", command=["python3", "-m", "vllm.entrypoints.openai.api_server"])
    assert stderr(got) == ("api_server.py: error: unrecognized arguments: extra",)


def test_one_model_tag_and_a_variable_start() -> None:
    assert isinstance(judge("v0.11.0", LLAMA, "--max-model-len", "8192"), Launch)
    # exec-form argv reaches plan() as the kubelet expanded it: a `$(EXTRA)` left is the word vLLM gets
    assert stderr(judge("v0.11.0", LLAMA, "$(EXTRA)"))[-1] == "vllm: error: unrecognized arguments: $(EXTRA)"


@pytest.mark.parametrize(
    ("tag", "args", "error"),
    [
        ("v0.11.0", [LLAMA, "--tensor-parallel-size"], "argument --tensor-parallel-size/-tp: expected one argument"),
        ("v0.11.0", [LLAMA, "-tp"], "argument --tensor-parallel-size/-tp: expected one argument"),
        ("v0.16.0", [LLAMA, "--pipeline-parallel-size", "two"],
         "argument --pipeline-parallel-size/-pp: invalid int value: 'two'"),
        ("v0.34.0", [LLAMA, "--gpu-memory-utilization"],
         "argument --gpu-memory-utilization/--device-memory-utilization: expected one argument"),
        ("v0.11.0", [LLAMA, "--quantization", "int3"], "argument --quantization/-q: invalid choice: 'int3'"),
    ],
)
def test_argparse_names_every_option_string_of_the_action(tag: str, args: list[str], error: str) -> None:
    """argparse names an action by all its option strings joined with "/" (``_get_action_name``), as each release
    registers them (``add_argument("--tensor-parallel-size", "-tp", ...)``); the pod named only the long one, except
    for two flags it had written out by hand."""
    assert stderr(judge(tag, *args))[-1].startswith(f"vllm serve: error: {error}")


def test_the_rehearsals_names_agree_with_the_tools_table() -> None:
    """The pod's ``names`` (regular expressions over each wheel) and the tools' ``shown`` (the syntax tree, without the
    ``--no-x`` and inverse forms a boolean adds) name the same multi-string options in every release both read."""
    import json
    from importlib import resources

    from vllm_remedy.sim.vllm_pod import argv_options
    tools = json.loads(resources.files("vllm_remedy.vllm").joinpath("data/vllm_flags.json").read_text())
    pod = json.loads(resources.files(argv_options.__package__).joinpath("vllm_options.json").read_text())
    inverse = {"--enable-": "--disable-", "--disable-": "--enable-"}

    def plain(joined: str) -> str:
        parts = joined.split("/")
        return "/".join(p for p in parts if not p.startswith("--no-") and not any(
            q.startswith(x) and p == y + q[len(x):] and parts.index(q) < parts.index(p)
            for q in parts for x, y in inverse.items()))

    compared = 0
    for i, release in enumerate(tools["releases"]):
        if release not in pod["releases"]:
            continue
        j = pod["releases"].index(release)
        want = {plain(k) for k, spans in tools["shown"].items() if any(lo <= i <= hi for lo, hi in spans)}
        want = {k for k in want if "/" in k and k != "-h/--help"}
        got = {k for k, spans in pod["names"].items() if any(lo <= j < hi for lo, hi in spans)}
        assert got == want, release
        compared += 1
    assert compared >= 40
