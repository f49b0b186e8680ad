"""Kubernetes expands ``$(VAR)`` in command/args from the container's env before vLLM sees it (review 4, M6): the
flags the tools judge are the expanded ones (``$$`` escapes, an undefined or unreadable variable stays as written),
while the tokens an edit touches keep the manifest's text."""

from __future__ import annotations

from typing import Any

import pytest

from vllm_remedy.vllm.cmdline import find_server


def container(args: list[str], env: list[dict[str, Any]] | None = None, **more: Any) -> dict[str, Any]:
    return {"name": "vllm", "image": "vllm/vllm-openai:v0.11.0", "command": ["vllm", "serve"], "args": ["m", *args],
            "env": env or [], **more}


@pytest.mark.parametrize(("args", "env", "want"), [
    (["--max-model-len", "$(MML)"], [{"name": "MML", "value": "16Ki"}], "16Ki"),
    (["--max-model-len=$(MML)"], [{"name": "MML", "value": "8192"}], "8192"),
    (["--max-model-len", "$(A)$(B)"], [{"name": "A", "value": "8"}, {"name": "B", "value": "192"}], "8192"),
    (["--max-model-len", "$$(MML)"], [{"name": "MML", "value": "8192"}], "$(MML)"),  # $$ escapes
    (["--max-model-len", "$(NOPE)"], [{"name": "MML", "value": "8192"}], "$(NOPE)"),  # undefined: as written
    (["--max-model-len", "$(S)"], [{"name": "S", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}],
     "$(S)"),  # a Secret's value is not read: as written
])
def test_flags_are_what_kubernetes_hands_vllm(args, env, want):
    server = find_server({"containers": [container(args, env)]})
    assert server.flags["max-model-len"] == want


def test_an_edit_keeps_the_manifest_text():
    c = container(["--max-model-len", "$(MML)", "--max-num-seqs", "8"], [{"name": "MML", "value": "8192"}])
    edited = find_server({"containers": [c]}).edit(set={"max-num-seqs": "16"})
    assert edited["args"] == ["m", "--max-model-len", "$(MML)", "--max-num-seqs", "16"]
