"""A rehearsal pod given a long option its release's parser does not have ends as real vLLM does: argparse leaves it
over, and the top-level ``vllm`` parser refuses the leftovers: ``vllm: error: unrecognized arguments: --flag value``
after its own usage (``usage: vllm [-h] [-v] {chat,complete,serve,...} ...``), exit 2, nothing before. It
started instead (--hf-overrides on 0.6.3, --hf-config-path on 0.7.3), or was refused later in the tools' own words
(``ValueError: kv-cache-memory-bytes: vLLM 0.8.5 has no such flag``, exit 1), read through the tools' tables.
Boundaries from engine/arg_utils.py at each release (``argv_added.SPAN``)."""

from __future__ import annotations

from datetime import datetime

import pytest

from vllm_remedy.sim.seed import make_node
from vllm_remedy.sim.vllm_pod import argv_added, argv_cli, timeline
from vllm_remedy.sim.vllm_pod.launch import Launch, Refusal, plan
from vllm_remedy.vllm.cmdline import find_server
from vllm_remedy.vllm.versions import parse_version

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
HALF = '{"num_hidden_layers": 16}'


def judge(tag: str, *args: str) -> Launch | Refusal:
    c = {"name": "vllm", "image": f"vllm/vllm-openai:{tag}", "command": ["vllm", "serve"],
         "args": [LLAMA, *args], "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    node = make_node({"name": "n", "gpu": {"product": "NVIDIA-L40S", "count": 1}}, "t")
    return plan(find_server({"containers": [c]}), c, node)


#: (argv after the model, the last release read without the option, the first read with it)
BOUNDARIES = [
    (["--hf-overrides", HALF], "v0.6.3", "v0.6.4"),
    (["--hf-config-path", LLAMA], "v0.7.3", "v0.8.0"),
    (["--cuda-graph-sizes", "8"], "v0.8.5", "v0.9.0"),
    (["--kv-cache-memory-bytes", "4G"], "v0.10.1", "v0.10.2"),
    (["--cudagraph-capture-sizes", "8", "16"], "v0.11.0", "v0.11.1"),
    (["--max-cudagraph-capture-size", "16"], "v0.11.0", "v0.11.1"),
]


def _refused_as_argparse(got: Launch | Refusal, words: str) -> None:
    assert isinstance(got, Refusal) and got.stage == "argparse", got
    run = timeline.plan_refusal(got, datetime(2026, 1, 1))
    assert run.lines == ()  # no banner, no arguments line, no engine
    assert run.exit is not None and run.exit.code == 2
    assert run.exit.log == (*argv_cli.top_usage(parse_version(got.version)),
                            f"vllm: error: unrecognized arguments: {words}")


@pytest.mark.parametrize(("args", "without", "with_"), BOUNDARIES)
def test_the_last_release_without_the_option_refuses_it(args, without, with_):
    _refused_as_argparse(judge(without, *args), " ".join(args))


@pytest.mark.parametrize(("args", "without", "with_"), BOUNDARIES)
def test_the_first_release_with_the_option_starts(args, without, with_):
    assert isinstance(judge(with_, *args), Launch)


def test_cuda_graph_sizes_is_gone_from_0_13():
    """engine/arg_utils.py@0.12.0 keeps --cuda-graph-sizes, deprecated ("will be removed in v0.13.0"); @0.13.0 has
    no such option string."""
    assert isinstance(judge("v0.12.0", "--cuda-graph-sizes", "8"), Launch)
    _refused_as_argparse(judge("v0.13.0", "--cuda-graph-sizes", "8"), "--cuda-graph-sizes 8")


def test_leftovers_are_in_argv_order_with_the_other_leftovers():
    """An `=` form is one word, an underscore spelling is FlexibleArgumentParser's dashed one, and a stray
    positional between them stays where it was written (argparse's ``extras`` in the order it meets them)."""
    got = judge("v0.6.3", f"--hf_overrides={HALF}", "stray", "--max-num-seqs", "8", "--kv-cache-memory-bytes", "4G")
    _refused_as_argparse(got, f"--hf-overrides={HALF} stray --kv-cache-memory-bytes 4G")


def test_a_value_refused_by_its_type_comes_first():
    """argparse converts the options it has as it meets them and reports the leftovers only at the end."""
    got = judge("v0.8.5", "--kv-cache-memory-bytes", "4G", "--max-model-len", "16Ki")
    assert isinstance(got, Refusal) and got.error.splitlines()[-1] == (
        "vllm serve: error: argument --max-model-len: invalid human_readable_int value: '16Ki'")


def test_the_table_is_the_rehearsals_own():
    """Independent of the tools' ``cmdline.unrecognized.ADDED``: no import of the project's other packages."""
    with open(argv_added.__file__, encoding="utf-8") as fh:
        imports = [line for line in fh if line.startswith(("import ", "from "))]
    assert not [line for line in imports if "vllm_remedy" in line], imports
