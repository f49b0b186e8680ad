"""What the kubelet hands vLLM for ``$$(X)`` and an undefined ``$(X)``: the literal word ``$(X)``, which vLLM's argparse
reads like any other (a flag value it refuses, a stray positional), never a variable "that may carry flags". Only a
variable whose value this tool cannot read (a Secret, a ConfigMap not among the manifests) stays a placeholder."""

from __future__ import annotations

from typing import Any

import pytest

from vllm_remedy.vllm.cmdline import find_server
from vllm_remedy.vllm.cmdline.kubelet_env import expand
from vllm_remedy.vllm.cmdline.refused import refused

SECRET = {"valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}


@pytest.mark.parametrize(("text", "want"), [
    ("$(A)", "1"), ("$$(A)", "$(A)"), ("$$$(A)", "$1"), ("$$$$(A)", "$$(A)"), ("$(A", "$(A"), ("$", "$"),
    ("x$", "x$"), ("$x", "$x"), ("$(NOPE)", "$(NOPE)"), ("$()", "$()"), ("$(A B)", "2"), ("$($$)", "$($$)"),
    ("a$(A)b$(NOPE)c$(A)", "a1b$(NOPE)c1"), ("$(1X)", "3"),
])
def test_expand_is_the_kubelets(text, want):
    """expand.go: ``$(`` runs to the next ``)`` whatever the name (relaxed env names like ``1X`` included), ``$$`` is
    one ``$``, an undefined name is written back, an unclosed ``$(`` and a lone ``$`` stay."""
    known = {"A": "1", "A B": "2", "1X": "3"}
    assert expand(text, lambda name: known.get(name, f"$({name})")) == want


def _server(args: list[str], env: list[dict[str, Any]] | None = None) -> Any:
    return find_server({"containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.11.0",
                                        "command": ["vllm", "serve"], "args": ["m", *args], "env": env or []}]})


@pytest.mark.parametrize(("args", "env", "words", "message"), [
    (["--max-model-len", "$(NOPE)"], [], "--max-model-len '$(NOPE)'",
     "argument --max-model-len: invalid human_readable_int value: '$(NOPE)'"),
    (["--max-model-len=$$(MML)"], [{"name": "MML", "value": "8192"}], "'--max-model-len=$(MML)'",
     "argument --max-model-len: invalid human_readable_int value: '$(MML)'"),
    (["--dtype", "$(D)"], [{"name": "D", "value": "$$(E)"}], "--dtype '$(E)'",  # an env value's own escape
     "argument --dtype: invalid choice: '$(E)' (choose from 'auto', 'bfloat16', 'float', 'float16', 'float32', "
     "'half')"),
    (["--max-model-len", "8192", "$$(X)"], [], "'$(X)'", "unrecognized arguments: $(X)"),
    (["--max-model-len", "8192", "$(NOPE)"], [], "'$(NOPE)'", "unrecognized arguments: $(NOPE)"),
])
def test_a_literal_word_is_judged_as_vllm_receives_it(args, env, words, message):
    server = _server(args, env)
    assert [(str(r), r.message) for r in refused(server, "0.11.0")] == [(words, message)]
    assert server.hidden == ()


def test_an_escaped_model_tag_is_the_literal_and_no_hidden_argument():
    server = find_server({"containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.11.0",
                                          "command": ["vllm", "serve"], "args": ["$$(MODEL)", "--port", "8000"],
                                          "env": [{"name": "MODEL", "value": "org/m"}]}]})
    assert (server.model, server.hidden) == ("$(MODEL)", ())


@pytest.mark.parametrize("env", [
    [{"name": "X", **SECRET}],
    [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "unchecked", "key": "x"}}}],
    [],  # with envFrom a Secret: any variable may come from it
])
def test_a_variable_this_tool_cannot_read_stays_a_placeholder_beside_the_literal(env):
    """``$(X)`` read from a Secret is not judged (its value is unknown), while ``$$(X)`` beside it is the literal word
    ``$(X)`` vLLM leaves over: the same text, told apart by where it came from."""
    c = {"name": "vllm", "image": "vllm/vllm-openai:v0.11.0", "command": ["vllm", "serve"],
         "args": ["m", "--max-model-len", "$(X)", "$$(X)"], "env": env}
    if not env:
        c["envFrom"] = [{"secretRef": {"name": "extra"}}]
    server = find_server({"containers": [c]})
    assert [(str(r), r.message) for r in refused(server, "0.11.0")] == [("'$(X)'", "unrecognized arguments: $(X)")]
    assert server.hidden == () and server.flags["max-model-len"] == "$(X)"
    assert server.placeholder(server.options[0].tokens) and not server.placeholder(server.positionals)


def test_an_edit_drops_the_stray_word_where_the_manifest_wrote_it():
    server = _server(["--max-model-len", "8192", "$$(X)"])
    assert server.edit(drop=["$(X)"])["args"] == ["m", "--max-model-len", "8192"]
    server = _server(["--max-num-seqs", "8", "--max-model-len", "$(NOPE)"])
    assert server.edit(set={"max-model-len": "4096", "enforce-eager": "true"})["args"] == [
        "m", "--max-num-seqs", "8", "--max-model-len", "4096", "--enforce-eager"]


@pytest.mark.parametrize("name", ["LWS_LEADER_ADDRESS", "VLLM_SERVICE_PORT", "GATEWAY_PORT_8000_TCP_ADDR"])
def test_a_variable_the_cluster_injects_is_no_literal(name):
    """The LeaderWorkerSet controller and the service links set variables no manifest names: such a reference may
    expand at start, so it stays a placeholder, while an undefined name beside it is a literal word."""
    server = _server([f"$({name})", "$(NOPE)"])
    assert server.hidden == (f"$({name})",)
    assert refused(server, "0.11.0") == []  # a stray count that hangs on the placeholder is not judged
