"""Argv edits are spliced into the user's YAML text: every byte outside the changed items stays as it was."""

from __future__ import annotations

import difflib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vllm_remedy.errors import UserError
from vllm_remedy.vllm import manifest
from vllm_remedy.vllm.manifest_text import ManifestText

BLOCK = """\
# top comment
apiVersion: v1
kind: Pod
metadata: {name: p}   # flow map kept
spec:
  containers:
  - name: v
    image: 'vllm/vllm-openai:v0.8.5'
    command:
      - vllm
      - serve
      - "acme/m"       # model
      # a comment between items
      - --max-model-len
      - '8192'
      - --port
      - "8000"
    resources:
      limits: { nvidia.com/gpu : "1" }
...
---
kind: Service   # untouched document
metadata:
  name: s
"""


def container(m: ManifestText, doc: int = 0) -> dict:
    (_path, spec), = manifest.pod_specs(m.documents[doc])
    return spec["containers"][0]


def changed_lines(before: str, after: str) -> list[str]:
    return [ln for ln in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
            if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]


def test_unchanged_render_is_the_input() -> None:
    m = ManifestText(BLOCK, "f")
    assert m.render() is BLOCK
    c = container(m)
    m.set_list(c, "command", list(c["command"]))
    assert m.render() == BLOCK


def test_replace_keeps_quote_style_and_comments() -> None:
    m = ManifestText(BLOCK, "f")
    c = container(m)
    m.set_list(c, "command", ["vllm", "serve", "acme/m", "--max-model-len", "16384", "--port", "8000"])
    out = m.render()
    assert changed_lines(BLOCK, out) == ["-      - '8192'", "+      - '16384'"]


def test_insert_copies_the_dash_prefix_and_delete_takes_the_line() -> None:
    m = ManifestText(BLOCK, "f")
    c = container(m)
    m.set_list(c, "command", ["vllm", "serve", "acme/m", "--max-model-len", "8192", "--enforce-eager",
                              "--max-num-seqs", "64"])
    out = m.render()
    assert changed_lines(BLOCK, out) == ['-      - --port', '-      - "8000"', "+      - --enforce-eager",
                                         "+      - --max-num-seqs", '+      - "64"']
    assert manifest.load_documents(out, "f")[1] == {"kind": "Service", "metadata": {"name": "s"}}


def test_flow_list_keeps_separators_and_siblings_quoting() -> None:
    text = 'spec:\n  containers:\n  - name: v\n    command: ["vllm",  "serve", "m", "--port", "1"]  # c\n'
    m = ManifestText(text, "f")
    c = container(m)
    m.set_list(c, "command", ["vllm", "serve", "m", "--port", "2", "--max-model-len", "4096"])
    assert m.render() == ('spec:\n  containers:\n  - name: v\n'
                          '    command: ["vllm",  "serve", "m", "--port", "2", "--max-model-len", "4096"]  # c\n')


def test_plain_values_that_would_change_type_are_quoted() -> None:
    text = "containers:\n- name: v\n  args: [--a]\n"
    m = ManifestText(text, "f")
    c = container(m)
    m.set_list(c, "args", ["--a", "16384", "true", "x: y", "a #b", "$(X)"])
    out = m.render()
    assert out == 'containers:\n- name: v\n  args: [--a, "16384", "true", "x: y", "a #b", $(X)]\n'
    assert manifest.load_documents(out, "f")[0]["containers"][0]["args"] == ["--a", "16384", "true", "x: y",
                                                                              "a #b", "$(X)"]


def test_literal_script_keeps_header_indent_and_blank_line_after() -> None:
    text = ("containers:\n- name: v\n  command:\n  - sh\n  - -c\n  - |\n    set -e\n"
            "    vllm serve m --port 1\n\n  # trailing comment\n")
    m = ManifestText(text, "f")
    c = container(m)
    m.set_list(c, "command", ["sh", "-c", "set -e\nvllm serve m --port 2\n"])
    assert m.render() == text.replace("--port 1", "--port 2")


def test_folded_scalar_keeps_its_line_breaks() -> None:
    text = ("containers:\n- name: v\n  args:\n  - >-\n    exec vllm serve m\n    --port 1\n"
            "    --max-model-len 4096\n")
    m = ManifestText(text, "f")
    c = container(m)
    m.set_list(c, "args", ["exec vllm serve m --port 1 --max-model-len 8192 --enforce-eager"])
    assert m.render() == text.replace("4096", "8192 --enforce-eager")


def test_crlf_and_missing_final_newline_are_kept() -> None:
    text = "containers:\r\n- name: v\r\n  args:\r\n  - --port\r\n  - '1'"
    m = ManifestText(text, "f")
    c = container(m)
    m.set_list(c, "args", ["--port", "1", "--enforce-eager"])
    assert m.render() == text + "\r\n  - --enforce-eager"


def test_anchored_list_is_refused_not_miswritten() -> None:
    text = "x: &a [vllm, serve, m]\ncontainers:\n- name: v\n  command: *a\n- name: w\n  command: *a\n"
    m = ManifestText(text, "f")
    c = container(m)
    m.set_list(c, "command", ["vllm", "serve", "m", "--port", "1"])
    with pytest.raises(UserError, match=r"^f: cannot rewrite the argv in place without changing its meaning"):
        m.render()


def test_container_not_from_this_text_is_refused() -> None:
    m = ManifestText(BLOCK, "f")
    with pytest.raises(UserError, match=r"^f: container x: command is not a plain YAML list here"):
        m.set_list({"name": "x", "command": []}, "command", ["a"])


STYLES = st.sampled_from(["plain", "single", "double"])
WORDS = st.sampled_from(["vllm", "serve", "--port", "8000", "--max-model-len", "16384", "true", "a b", "x: y",
                         "$(MAX)", "{{ .N }}", '{"k":1}', "it's", "-tp", "2", "#x", "- y", "null", "~", "0.9"])


def _emit(word: str, style: str) -> str:
    if style == "single":
        return "'" + word.replace("'", "''") + "'"
    try:
        plain_ok = manifest.load_documents(f"- {word}", "") == [[word]]
    except UserError:
        plain_ok = False
    if style == "double" or not plain_ok:
        return '"' + word.replace('"', '\\"') + '"'
    return word


@settings(max_examples=150, deadline=None)
@given(old=st.lists(st.tuples(WORDS, STYLES), min_size=1, max_size=8), new=st.lists(WORDS, max_size=10),
       flow=st.booleans())
def test_any_edit_reads_back_exactly_and_outside_lines_are_untouched(old, new, flow) -> None:
    items = [_emit(w, s) for w, s in old]
    body = ("    args: [" + ", ".join(items) + "]\n") if flow else ("    args:\n" + "".join(f"    - {i}  # c\n"
                                                                                         for i in items))
    text = "# head\nspec:\n  containers:\n  - name: v\n" + body + "    image: x   # tail\n"
    m = ManifestText(text, "f")
    c = container(m)
    m.set_list(c, "args", new)
    out = m.render()
    assert manifest.load_documents(out, "f")[0]["spec"]["containers"][0] == {"name": "v", "args": new, "image": "x"}
    assert out.startswith("# head\nspec:\n  containers:\n  - name: v\n    args:")
    assert out.endswith("    image: x   # tail\n")
