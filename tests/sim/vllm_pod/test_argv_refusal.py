"""A rehearsal pod whose argv holds a value vLLM's argument parser refuses ends as real vLLM does: argparse's usage
line and ``vllm serve: error: argument --flag: invalid <type> value: '<text>'`` on stderr, exit 2, before any engine
line (review 3, M8: it logged an invented ValueError traceback through create_model_config with the tool's own
message, an ``args: Namespace(max_model_len=2048, ...)`` line, and exited 1)."""

from __future__ import annotations

from datetime import datetime

import pytest

from vllm_remedy.sim.seed import make_node
from vllm_remedy.sim.vllm_pod import argv, timeline
from vllm_remedy.sim.vllm_pod.launch import Launch, Refusal, plan
from vllm_remedy.vllm.cmdline import find_server

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"


def judge(tag: str, *args: str, command: list[str] | None = None) -> Launch | Refusal:
    c = {"name": "vllm", "image": f"vllm/vllm-openai:{tag}", "command": command or ["vllm", "serve"],
         "args": [LLAMA, *args], "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    node = make_node({"name": "n", "gpu": {"product": "NVIDIA-L40S", "count": 1}}, "t")
    return plan(find_server({"containers": [c]}), c, node)


@pytest.mark.parametrize(("tag", "args", "error"), [
    ("v0.11.0", ["--max-model-len", "16Ki"], "argument --max-model-len: invalid human_readable_int value: '16Ki'"),
    ("v0.8.5", ["--max-model-len", "auto"], "argument --max-model-len: invalid human_readable_int value: 'auto'"),
    ("v0.8.3", ["--max-model-len", "16k"], "argument --max-model-len: invalid int value: '16k'"),
    ("v0.14.0", ["--max-model-len", "16Ki"],
     "argument --max-model-len: invalid human_readable_int_or_auto value: '16Ki'"),
    ("v0.12.0", ["--max-model-len", "1t"], "argument --max-model-len: invalid human_readable_int value: '1t'"),
    ("v0.11.0", ["--max-model-len", "1.5K"], "argument --max-model-len: Decimals are not allowed with binary "
                                             "suffixes like K. Did you mean to use 1.5k instead?"),
    ("v0.11.0", ["--max-num-seqs", "1k", "--max-num-seqs", "64"], "argument --max-num-seqs: invalid int value: '1k'"),
    ("v0.11.0", ["--max-model-len", "16Ki", "--max-model-len", "8192"],
     "argument --max-model-len: invalid human_readable_int value: '16Ki'"),  # every occurrence is converted
    ("v0.9.0", ["--max-num-batched-tokens", "8k"], "argument --max-num-batched-tokens: invalid int value: '8k'"),
    ("v0.11.0", ["--gpu-memory-utilization", "90%"], "argument --gpu-memory-utilization: invalid float value: '90%'"),
])
def test_argparse_refuses_with_usage_on_stderr_and_exit_2(tag, args, error):
    got = judge(tag, *args)
    assert isinstance(got, Refusal) and got.stage == "argparse", got
    run = timeline.plan_refusal(got, datetime(2026, 1, 1))
    assert run.lines == ()  # nothing before: no banner, no arguments line, no engine
    assert run.exit is not None and run.exit.code == 2
    assert run.exit.log == ("usage: vllm serve [model_tag] [options]", f"vllm serve: error: {error}")


@pytest.mark.parametrize(("tag", "args"), [("v0.14.0", ["--max-model-len", "auto"]), ("v0.8.4", ["--max-model-len",
                                                                                                 "16k"]),
                                           ("v0.11.0", ["--max-model-len", " 16K "]), ("v0.13.0", ["--max-model-len",
                                                                                                  "1t"])])
def test_spellings_the_release_takes_start(tag, args):
    assert isinstance(judge(tag, *args), Launch)


def test_the_api_server_module_names_its_own_program():
    got = judge("v0.8.5", "--model", LLAMA, "--max-model-len", "16Ki",
                command=["python3", "-m", "vllm.entrypoints.openai.api_server"])
    assert isinstance(got, Refusal)
    assert got.error.splitlines() == [
        "api_server.py: error: argument --max-model-len: invalid human_readable_int value: '16Ki'"]


def test_the_reader_is_the_rehearsals_own():
    """Independent of the tools' reading (vllm.cmdline.values), as sim/vllm_pod/env.py is of pod_env.py."""
    with open(argv.__file__, encoding="utf-8") as fh:
        imports = [line for line in fh if line.startswith(("import ", "from "))]
    assert not [line for line in imports if "vllm_remedy" in line], imports


@pytest.mark.parametrize(("tag", "args", "error"), [  # review 4, H4: every occurrence is checked, not the last
    ("v0.11.0", ["--kv-cache-dtype", "fp9", "--kv-cache-dtype", "auto"],
     "argument --kv-cache-dtype: invalid choice: 'fp9' (choose from 'auto', 'bfloat16', 'fp8', 'fp8_e4m3', "
     "'fp8_e5m2', 'fp8_inc')"),  # sorted(CacheDType), config/cache.py@0.11.0: no fp8_ds_mla yet
    ("v0.8.5", ["--dtype", "fp16", "--dtype", "half"],
     "argument --dtype: invalid choice: 'fp16' (choose from 'auto', 'half', 'float16', 'bfloat16', 'float', "
     "'float32')"),
    ("v0.8.5", ["--kv-cache-dtype=fp8_inc"],
     "argument --kv-cache-dtype: invalid choice: 'fp8_inc' (choose from 'auto', 'fp8', 'fp8_e4m3', 'fp8_e5m2')"),
])
def test_argparse_checks_choices_at_every_occurrence(tag, args, error):
    got = judge(tag, *args)
    assert isinstance(got, Refusal) and got.stage == "argparse", got
    run = timeline.plan_refusal(got, datetime(2026, 1, 1))
    assert run.exit is not None and run.exit.code == 2
    assert run.exit.log[-1] == f"vllm serve: error: {error}"


@pytest.mark.parametrize(("tag", "args"), [("v0.11.0", ["--kv-cache-dtype", "fp8", "--dtype", "bfloat16"]),
                                           ("v0.8.5", ["--kv-cache-dtype", "fp8_e5m2", "--dtype", "half"])])
def test_allowed_choices_start(tag, args):
    assert isinstance(judge(tag, *args), Launch)
