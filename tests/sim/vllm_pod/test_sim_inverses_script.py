"""scripts/sim_vllm_inverses.py, the rehearsal's own reading of which ``--enable-x``/``--disable-x`` options get an
inverse from 0.33.0 (only a BooleanOptionalAction: utils/argparse_utils.py@0.33.0 registers EnableDisableAction in
its place): on a miniature release tree, and, where the extracted wheels are (VLLM_WHEEL_SOURCES), against the
committed table for every release that registers EnableDisableAction."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from textwrap import dedent

import pytest

from fixtures.wheels import complete

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "scripts"))

import sim_vllm_inverses  # noqa: E402
import sim_vllm_options  # noqa: E402

CONFIG = '''
class CacheConfig:
    enable_prefix_caching: bool | None = None
    """Whether to enable prefix caching."""
    disable_thing: bool = False
    enable_token: bool | str | None = None
    enable_budget: int | None = None
'''
ARG_UTILS = '''
import argparse
def get_kwargs(cls):
    return {}
class EngineArgs:
    @staticmethod
    def add_cli_args(parser):
        cache_kwargs = get_kwargs(CacheConfig)
        parser.add_argument("--enable-prefix-caching", **{**cache_kwargs["enable_prefix_caching"], "default": None})
        parser.add_argument("--disable-thing", **cache_kwargs["disable_thing"])
        parser.add_argument("--enable-token", **cache_kwargs["enable_token"])
        parser.add_argument("--enable-budget", **cache_kwargs["enable_budget"])
        parser.add_argument("--enable-lora", action=argparse.BooleanOptionalAction, help="(see --enable-x)")
        parser.add_argument("--disable-log-stats", action="store_true", help="Disable logging statistics.")
        parser.add_argument("--enforce-eager", action=argparse.BooleanOptionalAction)
        return parser
'''
CLI_ARGS = '''
class FrontendArgs:
    enable_auto_tool_choice: bool = False
    """Enable auto tool choice (a bool)."""
    disable_access_log_for_endpoints: str | None = None
    enable_middleware: bool = False
    @classmethod
    def _customize_cli_kwargs(cls, frontend_kwargs):
        frontend_kwargs["enable_middleware"]["action"] = "append"
        return frontend_kwargs
def make_arg_parser(parser):
    parser.add_argument("--headless", action="store_true")
    return parser
'''


def _tree(tmp: Path, arg_utils: str = ARG_UTILS) -> Path:
    root = tmp / "vllm"
    for rel, text in (("config/cache.py", CONFIG), ("engine/arg_utils.py", arg_utils),
                      ("entrypoints/common/cli_args.py", CLI_ARGS)):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(dedent(text), encoding="utf-8")
    return root


def test_only_boolean_optional_actions_get_an_inverse(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    got = sim_vllm_inverses.inverted(root, root / "entrypoints/common/cli_args.py", "")
    assert got == ["--enable-prefix-caching", "--disable-thing", "--enable-lora", "--enable-auto-tool-choice"]


def test_a_spread_it_cannot_trace_fails_loudly(tmp_path: Path) -> None:
    root = _tree(tmp_path, ARG_UTILS.replace('cache_kwargs["disable_thing"]', 'other_kwargs["disable_thing"]'))
    with pytest.raises(SystemExit, match="other_kwargs"):
        sim_vllm_inverses.inverted(root, root / "entrypoints/common/cli_args.py", "")


def test_the_committed_inverses_are_what_the_wheels_say() -> None:
    """Only where the extracted wheels are (VLLM_WHEEL_SOURCES=DIR of src-<release>/vllm)."""
    wheels = complete()
    table = json.loads((ROOT / "src/vllm_remedy/sim/vllm_pod/vllm_options.json").read_text(encoding="utf-8"))
    checked = 0
    for i, release in enumerate(table["releases"]):
        root = wheels / f"src-{release}" / "vllm"
        if not root.is_dir():
            continue
        committed = {o for o, spans in table["inverted"].items() if any(a <= i < b for a, b in spans)}
        if not any("EnableDisableAction" in f.read_text(encoding="utf-8") for f in root.glob("utils*/*.py")):
            assert committed == set(), release
            continue
        read = sim_vllm_inverses.inverted(root, sim_vllm_options._parser_file(root),
                                          sim_vllm_options._serve_section(root))
        assert set(read) == committed and "--disable-log-stats" not in read, release
        checked += 1
    assert checked >= 2
