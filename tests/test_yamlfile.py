"""The YAML read limits, on both parsers: PyYAML (`read_yaml`, policies) and ruamel.yaml (manifests).

Each hostile input is refused with one line naming the file and the limit, before the recursive composer,
``int()`` or a walk over the data sees it; input just inside each limit still reads.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from fixtures.yaml_bombs import hostile_inputs
from vllm_remedy.errors import UserError
from vllm_remedy.vllm import manifest
from vllm_remedy.yamlfile import MAX_DEPTH, MAX_DOCUMENTS, read_yaml

HOSTILE = hostile_inputs()


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_read_yaml_refuses_hostile_input_with_one_line(tmp_path: Path, name: str) -> None:
    text, refusal = HOSTILE[name]
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    with pytest.raises(UserError) as err:
        read_yaml(path, "seed")
    assert str(err.value) == f"{path}: refused: {refusal}"


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_manifest_reader_refuses_hostile_input_with_one_line(name: str) -> None:
    text, refusal = HOSTILE[name]
    with pytest.raises(UserError) as err:
        manifest.load_documents(text, "m.yaml")
    assert str(err.value) == f"m.yaml: refused: {refusal}"


def test_input_at_each_limit_still_reads(tmp_path: Path) -> None:
    deep = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert manifest.load_documents(deep, "m.yaml")
    path = tmp_path / "deep.yaml"
    path.write_text(deep)
    assert read_yaml(path, "seed")
    assert len(manifest.load_documents("---\nx: 1\n" * MAX_DOCUMENTS, "m.yaml")) == MAX_DOCUMENTS
    assert manifest.load_documents("replicas: " + "9" * 1000 + "\n", "m.yaml") == [{"replicas": int("9" * 1000)}]
    # digits inside a quoted string are text, not a number
    assert manifest.load_documents('s: "' + "9" * 5000 + '"\n', "m.yaml") == [{"s": "9" * 5000}]


def test_shared_anchors_still_read() -> None:
    text = "defaults: &d {image: x, args: [--a]}\nitems:\n" + "  - *d\n" * 500
    [doc] = manifest.load_documents(text, "m.yaml")
    assert len(doc["items"]) == 500 and doc["items"][0] == {"image": "x", "args": ["--a"]}


def test_flow_openers_on_separate_lines_or_closed_between_are_not_the_text_check() -> None:
    """The one-line text check counts openers with no closer between; other nesting meets the event limit."""
    assert manifest.load_documents("a: [" + "[x], " * 500 + "[x]]\n", "m.yaml")
    with pytest.raises(UserError) as err:
        manifest.load_documents("[\n" * 101, "m.yaml")
    assert str(err.value) == "m.yaml: refused: YAML nested deeper than 100 levels (line 101)"


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_without_libyaml_the_readers_own_parse_still_refuses(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """The C pre-pass is a speed-up: PyYAML wheels without libyaml still get every limit, from the events."""
    monkeypatch.setattr(yaml, "__with_libyaml__", False)
    text, refusal = HOSTILE[name]
    with pytest.raises(UserError) as err:
        manifest.load_documents(text, "m.yaml")
    assert str(err.value) == f"m.yaml: refused: {refusal}"
