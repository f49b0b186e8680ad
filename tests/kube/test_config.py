"""Reading kubeconfig files: a hostile file (from host data or KUBECONFIG) is one line naming it."""

from __future__ import annotations

from pathlib import Path

import pytest

from fixtures.yaml_bombs import alias_bomb, hostile_inputs
from vllm_remedy.errors import UserError
from vllm_remedy.kube.config import KubeconfigSource, load_merged


@pytest.mark.parametrize("name", ["brackets", "nested-block-map", "long-integer", "many-aliases"])
def test_a_hostile_kubeconfig_is_refused_naming_it(tmp_path: Path, name: str) -> None:
    text, refusal = hostile_inputs()[name]
    path = tmp_path / "config"
    path.write_text(text)
    with pytest.raises(UserError) as err:
        load_merged(KubeconfigSource((path,), "--kubeconfig"))
    assert str(err.value) == f"kubeconfig {path}: refused: {refusal}"


def test_an_alias_bomb_kubeconfig_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "config"
    path.write_text(alias_bomb())
    with pytest.raises(UserError) as err:
        load_merged(KubeconfigSource((path,), "--kubeconfig"))
    assert str(err.value) == f"kubeconfig {path}: refused: YAML aliases expand to more than 100000 extra nodes " \
                             "(alias bomb?)"


def test_a_kubeconfig_reads(tmp_path: Path) -> None:
    path = tmp_path / "config"
    path.write_text("apiVersion: v1\nkind: Config\ncurrent-context: a\ncontexts: [{name: a, context: {cluster: c}}]\n")
    merged = load_merged(KubeconfigSource((path,), "--kubeconfig"))
    assert merged["current-context"] == "a" and merged["contexts"][0]["name"] == "a"
