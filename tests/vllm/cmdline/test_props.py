"""Property tests: round trip is byte-identical, set-then-show returns the value, unset removes — in every layout."""

from __future__ import annotations

import shlex

from hypothesis import given, settings
from hypothesis import strategies as st

from vllm_remedy.vllm.cmdline import find_server
from vllm_remedy.vllm.cmdline.flags import off_by_default

VALUE_FLAGS = ["max-model-len", "max-num-seqs", "gpu-memory-utilization", "port", "dtype", "kv-cache-dtype",
               "tensor-parallel-size", "max-num-batched-tokens", "speculative-config", "host"]
BOOL_FLAGS = ["enforce-eager", "trust-remote-code", "enable-prefix-caching", "enable-chunked-prefill",
              "disable-log-stats", "enable-lora", "enable-auto-tool-choice"]

values = st.one_of(
    st.integers(min_value=1, max_value=10**6).map(str),
    st.sampled_from(["0.9", "bfloat16", "fp8", "auto", '{"method":"ngram","k":4}', "$(MAX_LEN)", "{{ .Len }}",
                     "a b", "x=y"]),
)


@st.composite
def flag_items(draw):
    """A list of (canonical name, argv words, effective value) in one generated style."""
    items = []
    for _ in range(draw(st.integers(min_value=0, max_value=7))):
        if draw(st.booleans()):
            name = draw(st.sampled_from(VALUE_FLAGS))
            value = draw(values)
            spelled = name.replace("-", "_") if draw(st.booleans()) else name
            words = [f"--{spelled}={value}"] if draw(st.booleans()) else [f"--{spelled}", value]
        else:
            name = draw(st.sampled_from(BOOL_FLAGS))
            negated = name == "enable-prefix-caching" and draw(st.booleans())
            value = "false" if negated else "true"
            words = [f"--no-{name}" if negated else f"--{name}"]
        items.append((name, words, value))
    return items


LAYOUTS = ["list", "split", "sh-c", "script", "piped"]


def build(layout: str, words: list[str]) -> dict:
    head = ["vllm", "serve", "acme/m7b"]
    if layout == "list":
        return {"name": "v", "command": head + words}
    if layout == "split":
        return {"name": "v", "command": head[:2], "args": head[2:] + words}
    line = " ".join(shlex.quote(w) for w in head + words)
    if layout == "sh-c":
        return {"name": "v", "command": ["/bin/sh", "-c"], "args": [line]}
    if layout == "piped":  # redirects and a pipe after the vLLM argv: new flags must land before them
        return {"name": "v", "command": ["sh", "-c", f"FOO=1 exec {line} 2>&1 | tee -a /tmp/vllm.log"]}
    script = f"set -e\nexport A=1 && echo 'vllm serve decoy --port 1'\nexec {line}\necho after --port 2\n"
    return {"name": "v", "command": ["bash", "-c", script]}


def expected(items) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, _words, value in items:
        out[name] = value
    return out


def parsed(container: dict):
    return find_server({"containers": [container]})


@settings(max_examples=150, deadline=None)
@given(layout=st.sampled_from(LAYOUTS), items=flag_items())
def test_round_trip_is_byte_identical_and_flags_exact(layout, items) -> None:
    container = build(layout, [w for _n, ws, _v in items for w in ws])
    server = parsed(container)
    assert server.edit() == container
    assert server.model == "acme/m7b"
    assert server.flags == expected(items)


@settings(max_examples=150, deadline=None)
@given(layout=st.sampled_from(LAYOUTS), items=flag_items(), name=st.sampled_from(VALUE_FLAGS), value=values)
def test_set_then_show_returns_value_and_keeps_others(layout, items, name, value) -> None:
    container = build(layout, [w for _n, ws, _v in items for w in ws])
    before = parsed(container).flags
    after = parsed(parsed(container).edit(set={name: value}))
    assert after.flags[name] == value
    assert {k: v for k, v in after.flags.items() if k != name} == {k: v for k, v in before.items() if k != name}
    assert after.model == "acme/m7b"


@settings(max_examples=100, deadline=None)
@given(layout=st.sampled_from(LAYOUTS), items=flag_items(), name=st.sampled_from(BOOL_FLAGS), on=st.booleans())
def test_set_boolean_then_show(layout, items, name, on) -> None:
    container = build(layout, [w for _n, ws, _v in items for w in ws])
    before = parsed(container).flags
    after = parsed(parsed(container).edit(set={name: "true" if on else "false"})).flags
    if on:
        assert after[name] == "true"
    elif off_by_default(name):
        assert name not in after
    else:
        assert after[name] == "false"
    assert {k: v for k, v in after.items() if k != name} == {k: v for k, v in before.items() if k != name}


@settings(max_examples=100, deadline=None)
@given(layout=st.sampled_from(LAYOUTS), items=flag_items(), name=st.sampled_from(VALUE_FLAGS + BOOL_FLAGS))
def test_unset_removes_only_that_flag(layout, items, name) -> None:
    container = build(layout, [w for _n, ws, _v in items for w in ws])
    before = parsed(container).flags
    new = parsed(container).edit(unset=[name])
    after = parsed(new).flags
    assert name not in after
    assert after == {k: v for k, v in before.items() if k != name}
    if name not in before:
        assert new == container


@settings(max_examples=60, deadline=None)
@given(layout=st.sampled_from(LAYOUTS), items=flag_items(), value=values)
def test_edit_is_idempotent(layout, items, value) -> None:
    container = build(layout, [w for _n, ws, _v in items for w in ws])
    once = parsed(container).edit(set={"max-model-len": value, "enforce-eager": "true"})
    assert parsed(once).edit(set={"max-model-len": value, "enforce-eager": "true"}) == once
