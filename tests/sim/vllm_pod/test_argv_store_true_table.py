"""Which on/off switches are ``action="store_true"`` (no ``--no-`` form) is read per release from the wheels into the
rehearsal's table (``store_true``, scripts/sim_vllm_inverses.py), where a hand-written list of four flags stood.

argparse names a store_true action ``--x`` alone in ``ignored explicit argument`` and has no ``--no-x`` for it; the
pod named every other switch ``--x/--no-x`` (``--headless``, entrypoints/cli/serve.py@0.9.2-0.34.0; ``--grpc`` and
``--aggregate-engine-logging``, engine/arg_utils.py@0.34.0; ``--enable-sleep-mode``, @0.8.5), started with
``--no-headless``, and refused ``--no-enforce-eager`` on 0.9.0, whose parser registers ``--enforce-eager`` from the
``ModelConfig`` field (``**model_kwargs["enforce_eager"]``, engine/arg_utils.py@0.9.0: a BooleanOptionalAction)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from textwrap import dedent

import pytest

from fixtures.wheels import complete
from vllm_remedy.sim.seed import make_node
from vllm_remedy.sim.vllm_pod import argv
from vllm_remedy.sim.vllm_pod.launch import Launch, Refusal, plan
from vllm_remedy.vllm.cmdline import find_server, release_flags

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "scripts"))

import sim_vllm_inverses  # noqa: E402
import sim_vllm_options  # noqa: E402

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"


def judge(tag: str, *args: str) -> Launch | Refusal:
    c = {"name": "vllm", "image": f"vllm/vllm-openai:{tag}", "command": ["vllm", "serve"],
         "args": [LLAMA, "--max-model-len", "8192", *args], "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    node = make_node({"name": "n", "gpu": {"product": "NVIDIA-L40S", "count": 1}}, "t")
    return plan(find_server({"containers": [c]}), c, node)


def said(got: Launch | Refusal) -> str | None:
    return got.error.splitlines()[-1] if isinstance(got, Refusal) else None


@pytest.mark.parametrize(("tag", "args", "error"), [
    ("v0.9.2", ["--headless=1"], "vllm serve: error: argument --headless: ignored explicit argument '1'"),
    ("v0.34.0", ["--grpc=1"], "vllm serve: error: argument --grpc: ignored explicit argument '1'"),
    ("v0.34.0", ["--aggregate-engine-logging=yes"],
     "vllm serve: error: argument --aggregate-engine-logging: ignored explicit argument 'yes'"),
    ("v0.8.5", ["--enable-sleep-mode=1"],
     "vllm serve: error: argument --enable-sleep-mode: ignored explicit argument '1'"),
    # a BooleanOptionalAction keeps both names
    ("v0.9.0", ["--enforce-eager=1"],
     "vllm serve: error: argument --enforce-eager/--no-enforce-eager: ignored explicit argument '1'"),
])
def test_a_store_true_switch_is_named_alone(tag: str, args: list[str], error: str) -> None:
    assert said(judge(tag, *args)) == error


def test_a_store_true_switch_has_no_negated_form() -> None:
    assert said(judge("v0.9.2", "--no-headless")) == "vllm: error: unrecognized arguments: --no-headless"
    assert said(judge("v0.9.2", "--no-allow-credentials", "--no-enforce-eager")) == \
        "vllm: error: unrecognized arguments: --no-allow-credentials"  # --no-enforce-eager exists there


def test_0_9_0_reads_enforce_eager_from_the_model_config() -> None:
    assert isinstance(judge("v0.9.0", "--no-enforce-eager"), Launch)
    assert argv.store_true("enforce-eager", (0, 8, 5)) and not argv.store_true("enforce-eager", (0, 9, 0))
    assert argv.store_true("disable-log-stats", (0, 5, 5)) and argv.store_true("disable-log-stats", (0, 40, 0))


def test_no_store_true_switch_has_a_negated_form_in_the_tools_table() -> None:
    """The tools' table (the syntax tree of each wheel) lists every option string, ``--no-x`` forms included: none
    of the pod's store_true switches has one in any release both read."""
    table = json.loads((ROOT / "src/vllm_remedy/sim/vllm_pod/vllm_options.json").read_text(encoding="utf-8"))
    checked = 0
    for v in release_flags.releases():
        parser = release_flags.parser_for(".".join(map(str, v)))
        if parser is None or ".".join(map(str, v)) not in table["releases"]:
            continue
        switches = [o for o in table["store_true"] if argv.store_true(o[2:], v)]
        assert switches and [o for o in switches if f"--no-{o[2:]}" in parser.options] == [], v
        checked += 1
    assert checked >= 40


ARG_UTILS = '''
class EngineArgs:
    @staticmethod
    def add_cli_args(parser):
        parser.add_argument("--disable-log-stats", action="store_true", help="no --no- form")
        parser.add_argument('--enforce-eager',
                            action='store_true',
                            help='Always use eager-mode PyTorch.')
        parser.add_argument("--enable-lora", action=argparse.BooleanOptionalAction, help="store_true in help")
        parser.add_argument("--max-model-len", type=int)
        return parser
'''


def test_the_scan_reads_the_action_of_each_call(tmp_path: Path) -> None:
    root = tmp_path / "vllm"
    (root / "engine").mkdir(parents=True)
    (root / "engine/arg_utils.py").write_text(dedent(ARG_UTILS), encoding="utf-8")
    (root / "cli_args.py").write_text("def make_arg_parser(parser):\n    return parser\n", encoding="utf-8")
    serve = 'serve_parser.add_argument("--headless", action="store_true")\n'
    assert sim_vllm_inverses.store_true(root, root / "cli_args.py", serve) == [
        "--disable-log-stats", "--enforce-eager", "--headless"]


def test_the_committed_switches_are_what_the_wheels_say() -> None:
    """Only where the extracted wheels are (VLLM_WHEEL_SOURCES=DIR of src-<release>/vllm)."""
    wheels = complete()
    table = json.loads((ROOT / "src/vllm_remedy/sim/vllm_pod/vllm_options.json").read_text(encoding="utf-8"))
    checked = 0
    for i, release in enumerate(table["releases"]):
        root = wheels / f"src-{release}" / "vllm"
        if not root.is_dir():
            continue
        committed = {o for o, spans in table["store_true"].items() if any(a <= i < b for a, b in spans)}
        read = sim_vllm_inverses.store_true(root, sim_vllm_options._parser_file(root),
                                            sim_vllm_options._serve_section(root))
        assert set(read) == committed, release
        checked += 1
    assert checked >= 40
