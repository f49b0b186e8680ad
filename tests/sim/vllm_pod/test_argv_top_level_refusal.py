"""``vllm serve``'s leftovers are refused by the top-level ``vllm`` parser, under its own prog and usage, as real vLLM
prints them: argparse's sub-parser action runs serve's parser with ``parse_known_args`` and hands what it leaves over
back to the top-level parser's ``parse_args``. Reported so, e.g. containers/ramalama#758::

    usage: vllm [-h] [-v]
                {chat,complete,serve,launch,bench,collect-env,run-batch} ...
    vllm: error: unrecognized arguments: --temperature 0.8

and vllm-project/vllm#13669 (``vllm: error: unrecognized arguments: --lora-path``), #8273 on 0.6.0. The rehearsal pod
printed ``vllm serve: error: unrecognized arguments`` after serve's usage for every release. What serve's own parser
raises (an invalid value, an ambiguous prefix, an ignored explicit argument, a missing ``model_tag``) stays
``vllm serve: error:``; the ``api_server.py`` module has one parser and keeps its name. The usage line per release is
read from vllm/scripts.py (to 0.7.2) and entrypoints/cli/main.py (from 0.7.3) by scripts/sim_vllm_cli.py; the
expectations below are written out by hand from those files, wrapped at 78 columns (no terminal in a container)."""

from __future__ import annotations

import json
import sys
from datetime import datetime
from pathlib import Path
from textwrap import dedent

import pytest

from fixtures.wheels import complete
from vllm_remedy.sim.seed import make_node
from vllm_remedy.sim.vllm_pod import timeline
from vllm_remedy.sim.vllm_pod.launch import Launch, Refusal, plan
from vllm_remedy.vllm.cmdline import find_server
from vllm_remedy.vllm.startup_log.parse import parse_startup_log

ROOT = Path(__file__).resolve().parents[3]
LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
MODULE = ["python3", "-m", "vllm.entrypoints.openai.api_server"]
HINT = ("Hint: --task is not a vllm serve option. For embedding, reranking, or reward models, use --runner pooling. "
        "To adapt a generative model for pooling, also use --convert embed, --convert classify, or --convert reward.")
#: the top-level parser's usage per release: scripts.py@0.5.5 (no -v), @0.6.5 (-v/--version), entrypoints/cli/main.py
#: @0.7.3 (openai, serve), @0.8.0 (+bench), @0.20.0 (launch, collect-env, run-batch), @0.34.0 (ten sub-commands)
TOP = {
    "v0.5.5": ["usage: vllm [-h] {serve,complete,chat} ..."],
    "v0.6.5": ["usage: vllm [-h] [-v] {serve,complete,chat} ..."],
    "v0.7.3": ["usage: vllm [-h] [-v] {chat,complete,serve} ..."],
    "v0.8.0": ["usage: vllm [-h] [-v] {chat,complete,serve,bench} ..."],
    "v0.20.0": ["usage: vllm [-h] [-v]",
                "            {chat,complete,serve,launch,bench,collect-env,run-batch} ..."],
    "v0.34.0": ["usage: vllm [-h] [-v]",
                "            {chat,complete,serve,launch,bench,collect-env,download-kernels,preload,run-batch,"
                "snapshot}", "            ..."],
}


def judge(tag: str, *args: str, command: list[str] | None = None) -> Launch | Refusal:
    c = {"name": "vllm", "image": f"vllm/vllm-openai:{tag}", "command": command or ["vllm", "serve"],
         "args": list(args), "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    node = make_node({"name": "n", "gpu": {"product": "NVIDIA-L40S", "count": 1}}, "t")
    return plan(find_server({"containers": [c]}), c, node)


def stderr(got: Launch | Refusal) -> list[str]:
    assert isinstance(got, Refusal) and got.stage == "argparse", got
    run = timeline.plan_refusal(got, datetime(2026, 1, 1))
    assert run.exit is not None and run.exit.code == 2 and run.lines == ()
    return list(run.exit.log)


@pytest.mark.parametrize("tag", sorted(TOP))
def test_serve_leftovers_are_refused_by_the_top_level_parser(tag: str) -> None:
    got = stderr(judge(tag, LLAMA, "--bogus-flag", "1"))
    assert got == [*TOP[tag], "vllm: error: unrecognized arguments: --bogus-flag 1"]


@pytest.mark.parametrize(("tag", "args", "error"), [
    ("v0.34.0", [LLAMA, "--max-num", "8"], "ambiguous option: --max-num could match"),
    ("v0.20.0", [LLAMA, "--max-model-len", "16Ki"], "argument --max-model-len: invalid human_readable_int_or_auto"),
    ("v0.34.0", [LLAMA, "--enable-lora=1"], "argument --enable-lora/--disable-lora: ignored explicit argument '1'"),
    ("v0.8.0", ["--max-model-len", "8192"], "the following arguments are required: model_tag"),
])
def test_what_serves_own_parser_raises_stays_under_its_name(tag: str, args: list[str], error: str) -> None:
    got = stderr(judge(tag, *args))
    assert got[0] in ("usage: vllm serve [model_tag] [options]", "usage: vllm serve <model_tag> [options]")
    assert got[1].startswith(f"vllm serve: error: {error}"), got


def test_the_api_server_module_keeps_its_own_name() -> None:
    """No sub-parser there: the one parser refuses its own leftovers (its generated usage is not rendered)."""
    got = stderr(judge("v0.9.2", "--model", LLAMA, "--bogus-flag", "1", command=MODULE))
    assert got == ["api_server.py: error: unrecognized arguments: --bogus-flag 1"]
    got = stderr(judge("v0.30.0", "--model", LLAMA, "--task=embed", command=MODULE))
    assert got == ["api_server.py: error: unrecognized arguments: --task=embed"]  # no hint: not ``vllm serve``


def test_from_0_29_a_left_over_task_gets_vllms_hint() -> None:
    """FlexibleArgumentParser.error (utils/argparse_utils.py@0.29.0-0.34.0) appends it to ``vllm serve``'s leftovers
    when they hold ``--task``, which those releases no longer have (0.28.0's parser has no such ``error``)."""
    got = stderr(judge("v0.30.0", LLAMA, "--task=embed"))
    assert got[-3:] == ["vllm: error: unrecognized arguments: --task=embed", "", HINT]
    assert stderr(judge("v0.28.0", LLAMA, "--task", "embed"))[-1] == "vllm: error: unrecognized arguments: --task embed"


@pytest.mark.parametrize("tag", ["v0.5.5", "v0.34.0"])
def test_the_tools_log_classifier_still_reads_an_argument_refusal(tag: str) -> None:
    for args in ([LLAMA, "--bogus-flag", "1"], [LLAMA, "--task", "embed"]):
        text = "\n".join(stderr(judge(tag, *args))) + "\n"
        assert parse_startup_log(text).failure.value == "argument_refused", text


def test_the_scan_reads_both_layouts(tmp_path: Path) -> None:
    """vllm/scripts.py's ``add_parser`` calls (to 0.7.2); entrypoints/cli/main.py's ``CMD_MODULES``, each module's
    ``cmd_init`` classes and their ``name`` (from 0.7.3); a release whose serve it cannot find fails loudly."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import sim_vllm_cli

    old = tmp_path / "old/vllm"
    old.mkdir(parents=True)
    (old / "scripts.py").write_text(dedent('''
        def main():
            parser = FlexibleArgumentParser(description="vLLM CLI")
            parser.add_argument('-v', '--version', action='version', version="x")
            subparsers = parser.add_subparsers(required=True, dest="subparser")
            serve_parser = subparsers.add_parser("serve", usage="vllm serve <model_tag> [options]")
            chat_parser = subparsers.add_parser(
                "chat", usage="vllm chat [options]")
    '''), encoding="utf-8")
    assert sim_vllm_cli.cli(old) == (["-h", "-v"], ["serve", "chat"])
    new = tmp_path / "new/vllm"
    (new / "entrypoints/cli/benchmark").mkdir(parents=True)
    (new / "entrypoints/cli/main.py").write_text(dedent('''
        def main():
            CMD_MODULES = [vllm.entrypoints.cli.openai, vllm.entrypoints.cli.benchmark.main]
            parser = FlexibleArgumentParser(description="vLLM CLI")
            subparsers = parser.add_subparsers(required=False, dest="subparser")
    '''), encoding="utf-8")
    (new / "entrypoints/cli/openai.py").write_text(dedent('''
        class ServeCommand(CLISubcommand):
            def __init__(self):
                self.name = "serve"
        class ChatCommand(CLISubcommand):
            name = "chat"
        def cmd_init() -> list[CLISubcommand]:
            return [ChatCommand(), ServeCommand()]
    '''), encoding="utf-8")
    (new / "entrypoints/cli/benchmark/main.py").write_text(
        'class B(CLISubcommand):\n    name = "bench"\ndef cmd_init():\n    return [B()]\n', encoding="utf-8")
    assert sim_vllm_cli.cli(new) == (["-h"], ["chat", "serve", "bench"])
    (new / "entrypoints/cli/openai.py").write_text("def cmd_init():\n    return []\n", encoding="utf-8")
    with pytest.raises(SystemExit, match="no serve"):
        sim_vllm_cli.cli(new)


def test_the_committed_top_level_parsers_are_what_the_wheels_say() -> None:
    """Only where the extracted wheels are (VLLM_WHEEL_SOURCES=DIR of src-<release>/vllm)."""
    wheels = complete()
    sys.path.insert(0, str(ROOT / "scripts"))
    import sim_vllm_cli

    table = json.loads((ROOT / "src/vllm_remedy/sim/vllm_pod/vllm_options.json").read_text(encoding="utf-8"))
    read = {r: list(map(list, sim_vllm_cli.cli(wheels / f"src-{r}" / "vllm"))) for r in table["releases"]
            if (wheels / f"src-{r}" / "vllm").is_dir()}
    assert len(read) >= 40 and all(table["cli"][r] == got for r, got in read.items())
