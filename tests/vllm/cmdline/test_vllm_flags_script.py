"""scripts/vllm_flags.py on a miniature release tree: it follows the serve parser only, notes BooleanOptionalAction's
``--no-x``, unrolls a loop over literal option strings, and fails loudly on what it cannot read instead of dropping
options (the real releases are not on CI: ``test_release_flags`` checks the committed table)."""

from __future__ import annotations

import sys
from pathlib import Path
from textwrap import dedent

import pytest

ROOT = Path(__file__).resolve().parents[3]

UTILS = '''
import argparse
class FlexibleArgumentParser(argparse.ArgumentParser):
    def parse_args(self, args=None, namespace=None):
        return super().parse_args(args, namespace)
'''
ARG_UTILS = '''
import argparse
from dataclasses import dataclass
from vllm.config import CacheConfig

def get_kwargs(cls):
    return {}

@dataclass
class EngineArgs:
    @staticmethod
    def add_cli_args(parser):
        cache_kwargs = get_kwargs(CacheConfig)
        group = parser.add_argument_group("CacheConfig")
        group.add_argument("--enable-prefix-caching", **cache_kwargs["enable_prefix_caching"])
        group.add_argument("--block-size", **cache_kwargs["block_size"])
        group.add_argument("--sizes", **cache_kwargs["sizes"])
        cache_kwargs["block_size"]["nargs"] = "?"
        group.add_argument("--block-size-bare", **cache_kwargs["block_size"])
        del cache_kwargs["block_size"]["nargs"]
        group.add_argument("--block-size-again", **cache_kwargs["block_size"])
        parser.add_argument("--enforce-eager", action=argparse.BooleanOptionalAction)
        for flag in ("--a-flag", "--b-flag"):
            parser.add_argument(flag, type=int)
        {extra}
        return parser
'''
CONFIG = '''
from dataclasses import dataclass
@dataclass
class CacheConfig:
    enable_prefix_caching: bool | None = None
    block_size: int = 16
    sizes: "Optional[list[int]]" = None
'''
CLI_ARGS = '''
from vllm.engine.arg_utils import EngineArgs
def make_arg_parser(parser):
    parser.add_argument("--port", type=int)
    parser = EngineArgs.add_cli_args(parser)
    return parser
'''
SCRIPTS = '''
from vllm.entrypoints.openai.cli_args import make_arg_parser
from vllm.utils import FlexibleArgumentParser
def main():
    parser = FlexibleArgumentParser()
    parser.add_argument("-v", "--version", action="version")
    subparsers = parser.add_subparsers()
    serve_parser = subparsers.add_parser("serve")
    serve_parser.add_argument("model_tag")
    serve_parser = make_arg_parser(serve_parser)
    chat = subparsers.add_parser("chat")
    chat.add_argument("--url")
'''


def _tree(tmp_path: Path, extra: str = "") -> Path:
    root = tmp_path / "src-0.1.0" / "vllm"
    files = {"utils.py": UTILS, "engine/arg_utils.py": ARG_UTILS.replace("{extra}", extra), "config.py": CONFIG,
             "entrypoints/openai/cli_args.py": CLI_ARGS, "scripts.py": SCRIPTS}
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(dedent(text))
    return tmp_path


@pytest.fixture(scope="module")
def script():
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import vllm_flags
        import vllm_flags_read
    finally:
        sys.path.pop(0)
    return vllm_flags, vllm_flags_read


def test_the_serve_parsers_option_strings_are_read(script, tmp_path):
    table = script[0].generate(_tree(tmp_path))
    assert table["releases"] == ["0.1.0"]
    order = ["-h", "--help", "--port", "--enable-prefix-caching", "--no-enable-prefix-caching", "--block-size",
             "--sizes", "--block-size-bare", "--block-size-again", "--enforce-eager", "--no-enforce-eager", "--a-flag",
             "--b-flag"]
    assert set(table["options"]) == set(order)
    assert table["parser"] == {"allow_abbrev": [[0, 0]], "dotted": [], "enable_disable_inverse": [],
                               "underscore": []}
    # the words each takes: a bool field or BooleanOptionalAction none, a list field nargs='+', a caller's nargs
    # assignment until its ``del``; one word (not written) otherwise
    assert table["nargs"] == {"0": {o: [[0, 0]] for o in ("-h", "--help", "--enable-prefix-caching",
                                                        "--no-enable-prefix-caching", "--enforce-eager",
                                                        "--no-enforce-eager")},
                              "+": {"--sizes": [[0, 0]]}, "?": {"--block-size-bare": [[0, 0]]}}
    assert table["shown"] == {"-h/--help": [[0, 0]], "--enforce-eager/--no-enforce-eager": [[0, 0]],
                              "--enable-prefix-caching/--no-enable-prefix-caching": [[0, 0]]}
    assert table["order"] == {"all": order, "moved": {}}


@pytest.mark.parametrize("extra", [
    'parser.add_argument(f"--{NAME}")',  # an option string that is no literal
    "register_more(parser)",  # the parser handed to a function it cannot find
    'parser.add_argument("--x", **unknown_kwargs)',  # **kwargs it cannot trace to a config field
])
def test_what_it_cannot_read_fails_loudly(script, tmp_path, extra):
    with pytest.raises(script[1].Unreadable):
        script[0].generate(_tree(tmp_path, extra))


def test_spans_are_inclusive_runs(script):
    assert script[0].spans([0, 1, 2, 5, 7, 8]) == [[0, 2], [5, 5], [7, 8]]
