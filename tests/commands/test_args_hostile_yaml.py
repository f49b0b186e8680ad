"""`vllm-remedy args` (and `plan`) on hostile YAML: alias bombs, deep nesting, recursive aliases and oversized input
are refused in one line with exit 2; shared anchors of real manifests still read.

Moved out of ``test_args.py`` (show and set on ordinary manifests), through the real CLI in a subprocess.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from fixtures.yaml_bombs import alias_bomb, hostile_inputs


@pytest.mark.parametrize("action", [["show"], ["set", "--set", "max-model-len=4096"]])
def test_an_alias_bomb_is_refused_fast_with_one_line(cli, tmp_path: Path, action: list[str]) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(alias_bomb())
    started = time.monotonic()
    got = cli("args", action[0], "-f", str(path), *action[1:])
    # a hang guard, not a speed target (that is bench/'s job on a shared machine): before the limit, every
    # walk over the built data expanded 9**9 nodes and took minutes
    assert time.monotonic() - started < 60
    assert (got.returncode, got.stdout, got.stderr) == (
        2, "", f"vllm-remedy: error: {path}: refused: YAML aliases expand to more than 100000 extra nodes "
               "(alias bomb?)\n")


HOSTILE = hostile_inputs()


@pytest.mark.parametrize("name", sorted(HOSTILE))
@pytest.mark.parametrize("command", [["args", "show"], ["plan"]])
def test_hostile_yaml_is_refused_with_one_line_and_exit_2(cli, tmp_path: Path, command: list[str], name: str) -> None:
    """Each crashed (RecursionError, int() digit limit) or stalled (tens of seconds) the reader before."""
    text, refusal = HOSTILE[name]
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    got = cli(*command, "-f", str(path))
    assert (got.returncode, got.stdout, got.stderr) == (2, "", f"vllm-remedy: error: {path}: refused: {refusal}\n")


def test_args_set_refuses_hostile_yaml_and_leaves_the_file(cli, tmp_path: Path) -> None:
    text, refusal = HOSTILE["brackets"]
    path = tmp_path / "deep.yaml"
    path.write_text(text)
    got = cli("args", "set", "-f", str(path), "--set", "max-model-len=4096")
    assert (got.returncode, got.stdout, got.stderr) == (2, "", f"vllm-remedy: error: {path}: refused: {refusal}\n")
    assert path.read_text() == text


def test_recursive_aliases_and_oversized_input_are_refused(cli, tmp_path: Path) -> None:
    path = tmp_path / "loop.yaml"
    path.write_text("spec: &s\n  containers: [{name: v, command: [vllm, serve, m]}]\n  again: *s\nx: &x [*x]\n")
    got = cli("args", "show", "-f", str(path))
    assert (got.returncode, got.stderr) == (
        2, f"vllm-remedy: error: {path}: refused: a YAML alias refers to its own anchor (recursive document)\n")
    big = cli("args", "show", "-f", "-", stdin="#" * (16 * 1024 * 1024) + "\n")
    assert (big.returncode, big.stderr) == (2, "vllm-remedy: error: <stdin>: refused: larger than 16 MiB\n")


def test_shared_anchors_of_real_manifests_still_read(cli, tmp_path: Path) -> None:
    path = tmp_path / "anchors.yaml"
    path.write_text("x-args: &args [--max-model-len, '4096']\nspec:\n  containers:\n"
                    "    - {name: a, command: [vllm, serve, m], args: *args}\n")
    got = cli("args", "show", "-f", str(path), "-o", "json")
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout)["items"][0]["flags"] == {"max-model-len": "4096"}
