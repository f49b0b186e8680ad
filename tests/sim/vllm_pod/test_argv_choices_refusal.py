"""A rehearsal pod whose argv holds a value outside a flag's ``choices``, one its ``type=`` cannot convert, or a
``--compilation-config`` that is not JSON ends as vLLM does: argparse's usage and error on stderr, exit 2, from the
pod's own tables (``sim/vllm_pod/argv_choices.py``); CUDA graphs turned off through ``--compilation-config`` are
honoured (hostile review, findings 1-3)."""

from __future__ import annotations

from datetime import datetime

import pytest

from vllm_remedy.sim.seed import make_node
from vllm_remedy.sim.vllm_pod import argv, argv_choices, argv_compilation, timeline
from vllm_remedy.sim.vllm_pod.launch import Launch, Refusal, plan
from vllm_remedy.vllm.cmdline import find_server
from vllm_remedy.vllm.versions import parse_version

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"


def judge(tag: str, *args: str, gpu: str = "NVIDIA-L40S", gpus: int = 1) -> Launch | Refusal:
    c = {"name": "vllm", "image": f"vllm/vllm-openai:{tag}", "command": ["vllm", "serve"],
         "args": [LLAMA, *args], "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}
    node = make_node({"name": "n", "gpu": {"product": gpu, "count": gpus}}, "t")
    return plan(find_server({"containers": [c]}), c, node)


@pytest.mark.parametrize(("tag", "args", "error"), [
    ("v0.11.0", ["--block-size", "7"], "argument --block-size: invalid choice: 7 (choose from 1, 8, 16, 32, 64, 128)"),
    ("v0.6.6", ["--block-size", "1"], "argument --block-size: invalid choice: 1 (choose from 8, 16, 32, 64, 128)"),
    ("v0.11.0", ["--quantization", "nonsense"], "argument --quantization/-q: invalid choice: 'nonsense' (choose from "
     "'auto-round', 'awq', 'awq_marlin', "),
    ("v0.8.5", ["-q", "nonsense"], "argument --quantization/-q: invalid choice: 'nonsense' (choose from 'aqlm', "),
    ("v0.11.0", ["--tokenizer-mode", "zzz"],
     "argument --tokenizer-mode: invalid choice: 'zzz' (choose from 'auto', 'custom', 'mistral', 'slow')"),
    ("v0.8.5", ["--load-format", "zzz"], "argument --load-format: invalid choice: 'zzz' (choose from 'auto', 'pt', "),
    ("v0.11.0", ["--swap-space", "abc"], "argument --swap-space: invalid float value: 'abc'"),
    ("v0.34.0", ["--gpu-memory-utilization", "abc"], "argument --gpu-memory-utilization/--device-memory-utilization: "
     "Value abc cannot be converted to <class 'float'>."),
    ("v0.11.0", ["--compilation-config", "{bad"], "argument --compilation-config/-O: 1 validation error for "
     "CompilationConfig\n  Invalid JSON: key must be a string at line 1 column 2 [type=json_invalid, "
     "input_value='{bad', input_type=str]"),
    ("v0.20.0", ["-cc", "{bad"], "argument --compilation-config/-cc: 1 validation error for CompilationConfig"),
    ("v0.20.0", ["--compilation-config", '{"level": 0}'], "argument --compilation-config/-cc: 1 validation error for "
     "CompilationConfig\nlevel\n  Unexpected keyword argument [type=unexpected_keyword_argument, input_value=0, "
     "input_type=int]"),
])
def test_argparse_refuses_from_the_pod_s_own_tables(tag: str, args: list[str], error: str) -> None:
    got = judge(tag, *args)
    assert isinstance(got, Refusal) and got.stage == "argparse", got
    run = timeline.plan_refusal(got, datetime(2026, 1, 1))
    assert run.exit is not None and run.exit.code == 2
    assert run.exit.log[0] == argv.serve_usage(parse_version(got.version))  # ``<model_tag>`` to 0.8.0
    assert "\n".join(run.exit.log[1:]).startswith(f"vllm serve: error: {error}")


@pytest.mark.parametrize(("tag", "args"), [
    ("v0.12.0", ["--block-size", "256"]), ("v0.20.0", ["--block-size", "7"]),
    ("v0.11.0", ["--load-format", "SafeTensors"]),  # no choices; a registered loader (an unknown one: config_refused)
    ("v0.11.0", ["--quantization", "None"]), ("v0.11.0", ["-O3"]), ("v0.11.0", ["--compilation-config", '{"level":3}']),
])
def test_values_the_release_takes_start(tag: str, args: list[str]) -> None:
    assert isinstance(judge(tag, *args), Launch)


def test_graphs_turned_off_by_the_compilation_config_are_not_captured() -> None:
    """0.11.0 TP 2 on L4 at 32k dies capturing CUDA graphs with the defaults; with cudagraph_mode NONE there is no
    graph pool to capture."""
    base = judge("v0.11.0", "--tensor-parallel-size", "2", "--max-model-len", "32768", gpu="NVIDIA-L4", gpus=2)
    off = judge("v0.11.0", "--tensor-parallel-size", "2", "--max-model-len", "32768", "--compilation-config",
                '{"cudagraph_mode": "NONE"}', gpu="NVIDIA-L4", gpus=2)
    assert isinstance(base, Launch) and isinstance(off, Launch)
    assert base.estimate.cudagraph_gib > 0
    assert off.estimate.cudagraph_gib == 0.0


@pytest.mark.parametrize("module", [argv_choices, argv_compilation])
def test_the_tables_are_the_rehearsal_s_own(module: object) -> None:
    with open(module.__file__, encoding="utf-8") as fh:  # type: ignore[attr-defined]
        imports = [line for line in fh if line.startswith(("import ", "from "))]
    assert not [line for line in imports if "vllm_remedy" in line], imports
