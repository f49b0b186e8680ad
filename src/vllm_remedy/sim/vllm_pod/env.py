"""Substitutions that happen before vLLM sees its argv: kubelet's ``$(VAR)`` and, in ``sh -c`` scripts, the shell's.

Real manifests write ``--model=$(MODEL_ID)`` (Vertex, KServe) or ``--tensor-parallel-size $TP_SIZE`` inside a
script; the container runs with the expanded values, so the simulator must judge those, not the tokens.
Only literal ``env`` values are known here (``valueFrom`` needs the API); anything unknown stays verbatim,
as kubelet leaves an undefined ``$(VAR)`` and as the memory model then reports it.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any

_KUBELET = re.compile(r"\$\$|\$\((\w+)\)")
_SHELL = re.compile(r"\$\{(\w+)(?::?-([^}]*))?\}|\$(\w+)")


def literal_env(container: Mapping[str, Any]) -> dict[str, str]:
    """Name → value for env entries with a literal value (later entries win, like kubelet)."""
    out: dict[str, str] = {}
    for entry in container.get("env") or []:
        if isinstance(entry, Mapping) and "name" in entry and "value" in entry:
            out[str(entry["name"])] = str(entry["value"])
    return out


def kubelet_expand(container: Mapping[str, Any]) -> dict[str, Any]:
    """A copy with ``$(VAR)`` in command/args replaced as kubelet does (``$$`` escapes, unknown kept)."""
    env = literal_env(container)
    out = copy.deepcopy(dict(container))

    def one(text: str) -> str:
        return _KUBELET.sub(lambda m: "$" if m.group(0) == "$$" else env.get(m.group(1), m.group(0)), text)

    for key in ("command", "args"):
        if isinstance(out.get(key), list):
            out[key] = [one(v) if isinstance(v, str) else v for v in out[key]]
    return out


def shell_expand(value: str, env: Mapping[str, str]) -> str:
    """``$X``, ``${X}``, ``${X:-default}`` with the container's env (what ``sh -c`` would do)."""
    def one(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(3)
        if name in env:
            return env[name]
        return m.group(2) if m.group(2) is not None else m.group(0)

    return _SHELL.sub(one, value)
